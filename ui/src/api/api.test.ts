import { describe, expect, it, vi } from "vitest";
import { ApiFailure, cleanFilter, inTauri, toFailure } from "./index";
import { HttpApi } from "./http";
import { TauriApi } from "./tauri";

function res(status: number, body: unknown, text = false): Response {
  return new Response(text ? String(body) : JSON.stringify(body), {
    status,
    headers: { "Content-Type": text ? "text/csv" : "application/json" },
  });
}

describe("backend choice", () => {
  it("picks Tauri only inside the Tauri window", () => {
    expect(inTauri({})).toBe(false);
    expect(inTauri({ __TAURI_INTERNALS__: {} })).toBe(true);
  });
});

describe("HTTP backend", () => {
  it("sends JSON bodies to the right routes with the session cookie, never a token header", async () => {
    const f = vi.fn(async () => res(200, { source: "keyring", hint: "…wxyz", env_var: "OPENAI_API_KEY" }));
    const a = new HttpApi("http://h", f as unknown as typeof fetch);
    const ks = await a.setKey("open ai", "sk-1");
    expect(ks.hint).toBe("…wxyz");
    const [url, init] = f.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("http://h/api/keys/open%20ai");
    expect(init.method).toBe("PUT");
    expect(init.credentials).toBe("same-origin");
    expect((init.headers as Record<string, string>).Authorization).toBeUndefined();
    expect(JSON.parse(init.body as string)).toEqual({ key: "sk-1" });
  });

  it("asks for the last refusals of the audit trail", async () => {
    const f = vi.fn(async () => res(200, { enabled: true, file: "/h/audit/audit.jsonl", refusals: [] }));
    const r = await new HttpApi("", f as unknown as typeof fetch).refusals(5);
    expect(r.enabled).toBe(true);
    expect((f.mock.calls[0] as unknown as [string])[0]).toBe("/api/audit/refusals?limit=5");
  });

  it("turns error bodies into ApiFailure with code and fields", async () => {
    const f = vi.fn(async () => res(400, { code: "invalid_argument", message: "provider \"x\" is unknown", fields: [] }));
    const a = new HttpApi("", f as unknown as typeof fetch);
    await expect(a.setKey("x", "k")).rejects.toMatchObject({ code: "invalid_argument", status: 400 });
  });

  it("maps 401 to code unauthorized", async () => {
    const f = vi.fn(async () => res(401, { code: "unauthorized", message: "missing or wrong token" }));
    const e = await new HttpApi("", f as unknown as typeof fetch).status().catch((x) => x);
    expect(e).toBeInstanceOf(ApiFailure);
    expect(e.code).toBe("unauthorized");
  });

  it("resolves a 422 config save with its field errors instead of throwing", async () => {
    const body = { saved: false, errors: [{ key: "output.maxFileLines", message: "0 is out of range" }], overrides: {}, restart_required: [] };
    const f = vi.fn(async () => res(422, body));
    const r = await new HttpApi("", f as unknown as typeof fetch).saveConfig({ output: { maxFileLines: 0 } });
    expect(r.saved).toBe(false);
    expect(r.errors[0].key).toBe("output.maxFileLines");
  });

  it("encodes run filters as a query without empty values", async () => {
    const f = vi.fn(async () => res(200, "time_utc\n", true));
    const a = new HttpApi("", f as unknown as typeof fetch);
    await a.runsCsv({ since_ms: 5, until_ms: null, phase: "phase1", model: "", outcome: null });
    expect((f.mock.calls[0] as unknown as [string])[0]).toBe("/api/runs.csv?since_ms=5&phase=phase1");
    expect(cleanFilter({ since_ms: null, until_ms: 0, phase: "", model: null, outcome: "ok" })).toEqual({ until_ms: 0, outcome: "ok" });
  });

  it("reports network failures with code network", async () => {
    const f = vi.fn(async () => {
      throw new TypeError("Failed to fetch");
    });
    await expect(new HttpApi("", f as unknown as typeof fetch).memory()).rejects.toMatchObject({ code: "network" });
  });
});

describe("Tauri backend", () => {
  const answer = (status: number, body: unknown) => ({ status, content_type: "application/json", body: JSON.stringify(body) });
  it("sends the HTTP backend's requests through the one `api` command", async () => {
    const inv = vi.fn(async (_cmd: string, _args?: Record<string, unknown>) => answer(200, { saved: true, errors: [], overrides: {}, restart_required: [] }));
    const a = new TauriApi(inv);
    expect(a.kind).toBe("tauri");
    await a.saveConfig({ output: { maxFileLines: 5 } });
    expect(inv).toHaveBeenCalledWith("api", { method: "PUT", path: "/api/config", body: { output: { maxFileLines: 5 } } });
    inv.mockResolvedValueOnce(answer(200, { runs: [] }));
    await a.runs({ since_ms: null, until_ms: null, phase: "phase2", model: null, outcome: null });
    expect(inv).toHaveBeenLastCalledWith("api", { method: "GET", path: "/api/runs?phase=phase2", body: null });
  });
  it("turns error answers and rejected commands into ApiFailure", async () => {
    const a = new TauriApi(async () => answer(503, { code: "secrets", message: "no Secret Service", fields: [] }));
    await expect(a.setKey("openai", "k")).rejects.toMatchObject({ code: "secrets", message: "no Secret Service", status: 503 });
    const b = new TauriApi(async () => {
      throw new Error("ipc down");
    });
    await expect(b.status()).rejects.toMatchObject({ code: "network" });
    expect(toFailure("boom").code).toBe("network");
  });
  it("has its own launch-at-login commands", async () => {
    const inv = vi.fn(async () => ({ available: true, enabled: true }));
    const a = new TauriApi(inv);
    expect(await a.setAutostart(true)).toEqual({ available: true, enabled: true });
    expect(inv).toHaveBeenCalledWith("autostart_set", { enabled: true });
  });
});
