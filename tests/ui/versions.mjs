// Memory versions on the Memory page, in a real browser (playwright-core + Debian's chromium):
// a state home started with `memories.version = "v2"` and `memories.dual_write = true`, with
// a V1 folder (memories/) and a V2 folder (memories_v2/, a valid summary). The page must show
// both versions, say V2 is served and both pipelines run, show V2's readiness, and after the
// config file switches to v1, say the switch waits for a restart (still serving v2).
// Started by scripts/ui-e2e.sh with its own server:
//   V2_UI_URL  the one-time login link; V2_HOME the state home; SHOTS screenshots dir.
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
const HOME = env("V2_HOME");
let ctx, page;
const errors = [];

before(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "cf-chromium-v2-"));
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
    viewport: { width: 1280, height: 860 },
  });
  page = await ctx.newPage();
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(env("V2_UI_URL"));
  await page.getByTestId("page-dashboard").waitFor();
});

after(async () => {
  await ctx?.close();
});

async function shot(name) {
  await page.waitForTimeout(250);
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

test("dual-write: the memory page shows both versions and that v2 is served", async () => {
  await page.getByTestId("nav-memory").click();
  await page.getByTestId("page-memory").waitFor();
  const card = page.getByTestId("memory-versions");
  await card.waitFor();
  assert.match(await page.getByTestId("memory-versions-served").textContent(), /Serving v2 — dual-write on: both pipelines run/);
  const v1 = await page.getByTestId("memory-version-v1").textContent();
  const v2 = await page.getByTestId("memory-version-v2").textContent();
  assert.match(v1, /written, not served/);
  assert.match(v1, /valid/);
  assert.match(v2, /served/);
  assert.doesNotMatch(v2, /not served/);
  assert.match(v2, /valid/);
  assert.equal(await page.getByTestId("memory-version-v2-readiness").textContent(), "not ready — 0 of 20 consolidated threads");
  assert.equal(await page.getByTestId("memory-versions-pending").count(), 0);
  await shot("memory-versions");
});

test("a switch in the config file waits for the restart, and the page says so", async () => {
  const file = path.join(HOME, "codex.config.json");
  const cfg = JSON.parse(fs.readFileSync(file, "utf8"));
  cfg.memories.version = "v1";
  fs.writeFileSync(file, JSON.stringify(cfg));
  await page.reload();
  await page.getByTestId("nav-memory").click();
  await page.getByTestId("memory-versions").waitFor();
  assert.match(await page.getByTestId("memory-versions-served").textContent(), /Serving v2/);
  assert.match(
    await page.getByTestId("memory-versions-pending").textContent(),
    /memories\.version = v1, dual_write = true; it applies at the next start \(serving v2 until then\)/,
  );
  assert.match(await page.getByTestId("memory-version-v2").textContent(), /served/);
  await shot("memory-versions-pending");
  assert.deepEqual(errors, []);
});
