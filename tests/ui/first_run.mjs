// First run, in a real browser (playwright-core + Debian's chromium): a fresh state home with
// no provider key. The dashboard must say that no model can be called and link to Models &
// keys; after a key is saved there and the mock provider answers a "Test connection" (one
// real request, its cost shown), the same card shows the next run instead.
// Started by scripts/ui-e2e.sh with its own server (pipeline on) and the mock provider:
//   FR_UI_URL  the one-time login link; FR_HOME the fresh state home; SHOTS screenshots dir.
// Named *.mjs, not *.test.mjs, so `node --test tests/ui/` (the main suite) does not pick it up.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import os from "node:os";

const require = createRequire(new URL("../../ui/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set: run scripts/ui-e2e.sh`);
  return v;
};
const SHOTS = env("SHOTS");
let ctx, page;
const errors = [];

before(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "cf-chromium-fr-"));
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
    viewport: { width: 1280, height: 860 },
  });
  page = await ctx.newPage();
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(env("FR_UI_URL"));
  await page.getByTestId("page-dashboard").waitFor();
});

after(async () => {
  await ctx?.close();
});

async function shot(name) {
  await page.waitForTimeout(250);
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

test("no key: the dashboard says no model can be called and links to Models & keys", async () => {
  const blocked = page.getByTestId("pipeline-blocked");
  await blocked.waitFor();
  const text = await blocked.textContent();
  assert.match(text, /cannot run: no model can be called/);
  assert.match(text, /openai\/gpt-5-mini needs an API key for openai/);
  assert.doesNotMatch(await page.getByTestId("card-pipeline").textContent(), /\bidle\b/);
  assert.equal(await page.getByTestId("pipeline-next-run").textContent(), "—", "nothing is scheduled without a model");
  const link = page.getByTestId("pipeline-fix-link");
  assert.equal(await link.textContent(), "Open Models & keys");
  await shot("first-run-no-model");
  await link.click();
  await page.getByTestId("page-models").waitFor();
});

test("Models & keys offers cheap choices first, then a key and a test request with its cost", async () => {
  const cheap = page.getByTestId("cheap");
  await cheap.waitFor();
  assert.ok((await cheap.locator("tbody tr").count()) >= 3, "cheap hosted models listed");
  // The cheap card comes before the providers' key table.
  const cards = await page.locator("[data-testid=cheap], [data-testid=providers]").evaluateAll((els) => els.map((e) => e.dataset.testid));
  assert.deepEqual(cards, ["cheap", "providers"]);
  await page.getByTestId("key-input-openai").fill("sk-firstrun-00000000000000ABCD");
  await page.getByTestId("key-save-openai").click();
  await page.getByTestId("key-hint-openai").waitFor();
  await page.getByTestId("key-test-openai").click();
  const result = page.getByTestId("key-test-result-openai");
  await result.waitFor({ timeout: 30_000 });
  const msg = await result.textContent();
  assert.match(msg, /openai\/gpt-5-mini answered in \d+ ms: \d+ input \+ \d+ output tokens, \$\d/, msg);
  assert.equal(await result.getAttribute("class"), "ok-text");
  await shot("first-run-models");
});

test("with the key saved, the same card shows the next run", async () => {
  await page.getByTestId("nav-dashboard").click();
  await page.getByTestId("page-dashboard").waitFor();
  // The dashboard refreshes every 5 s; the saved key started a pass at once.
  await page.waitForFunction(() => !document.querySelector("[data-testid=pipeline-blocked]"), null, { timeout: 20_000 });
  await page.waitForFunction(
    () => /^\d{4}-\d\d-\d\d \d\d:\d\d$/.test(document.querySelector("[data-testid=pipeline-next-run]")?.textContent ?? ""),
    null,
    { timeout: 20_000 },
  );
  const card = await page.getByTestId("card-pipeline").textContent();
  assert.doesNotMatch(card, /no model can be called/);
  await shot("first-run-ready");
  // The test request is in the run log like every model call.
  await page.getByTestId("nav-runs").click();
  await page.getByTestId("page-runs").waitFor();
  await page.waitForFunction(() => document.body.textContent.includes("connection-test") || document.body.textContent.includes("test"), null, { timeout: 10_000 });
  assert.deepEqual(errors, []);
});

test("cleanup: the key is deleted again from the real Secret Service", async () => {
  await page.getByTestId("nav-models").click();
  await page.getByTestId("provider-openai").waitFor();
  await page.getByTestId("provider-openai").getByRole("button", { name: "Delete" }).click();
  await page.waitForFunction(() => /no key/.test(document.querySelector("[data-testid=key-state-openai]")?.textContent ?? ""), null, { timeout: 10_000 });
});
