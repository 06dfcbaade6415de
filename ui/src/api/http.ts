// HTTP backend: fetch to /api on the serving origin with the bearer token the user was
// given as `/#token=...` (a URL fragment never reaches a server or its logs).

import { ApiFailure, cleanFilter, toFailure } from "./index";
import type { Api, ConfigPatch } from "./index";
import type {
  ActionResult,
  ConfigSaveResult,
  ConfigView,
  ConnectionTest,
  KeyStatus,
  MemoryView,
  ModelsView,
  RunFilter,
  RunsView,
  Status,
} from "./types";

const TOKEN_KEY = "codex-free-token";

/**
 * Read the token from `?token=...` (how `codex-free serve --http --ui` prints the address;
 * the server also sets a same-site cookie from it) or `#token=...`, then remove it from the
 * address bar and history; else from session storage where a previous load put it.
 * Returns "" when there is none (the cookie alone may still authorise the calls).
 */
export function takeToken(
  loc: Pick<Location, "hash" | "pathname" | "search">,
  store: Pick<Storage, "getItem" | "setItem">,
  hist?: Pick<History, "replaceState">,
): string {
  const m = /(?:^[?#]|[?#&])token=([^&#]+)/.exec(loc.search) ?? /(?:^#|[#&])token=([^&]+)/.exec(loc.hash);
  if (m) {
    const token = decodeURIComponent(m[1]);
    store.setItem(TOKEN_KEY, token);
    const search = loc.search.replace(/([?&])token=[^&#]*&?/, "$1").replace(/[?&]$/, "");
    const hash = /token=/.test(loc.hash) ? "#/" : loc.hash || "#/";
    hist?.replaceState(null, "", loc.pathname + search + hash);
    return token;
  }
  return store.getItem(TOKEN_KEY) ?? "";
}

type Fetch = typeof fetch;

export class HttpApi implements Api {
  readonly kind = "http" as const;
  constructor(
    private readonly base: string,
    private readonly token: string,
    private readonly fetchImpl: Fetch = (...a) => fetch(...a),
  ) {}

  private async call<T>(method: string, path: string, body?: unknown, accept422 = false): Promise<T> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res: Response;
    try {
      res = await this.fetchImpl(this.base + path, {
        method,
        credentials: "same-origin",
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw toFailure(e);
    }
    if (res.ok || (accept422 && res.status === 422)) return (await res.json()) as T;
    let err: unknown;
    try {
      err = await res.json();
    } catch {
      err = { code: res.status === 401 ? "unauthorized" : "http", message: `${res.status} ${res.statusText}`.trim() };
    }
    const f = toFailure(err, res.status);
    if (res.status === 401 && f.code !== "unauthorized") {
      throw new ApiFailure({ code: "unauthorized", message: f.message, fields: [] }, 401);
    }
    throw f;
  }

  private query(f: RunFilter): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(cleanFilter(f))) q.set(k, String(v));
    const s = q.toString();
    return s ? `?${s}` : "";
  }

  status() { return this.call<Status>("GET", "/api/status"); }
  getConfig() { return this.call<ConfigView>("GET", "/api/config"); }
  validateConfig(patch: ConfigPatch) { return this.call<ConfigSaveResult>("POST", "/api/config/validate", patch); }
  saveConfig(patch: ConfigPatch) { return this.call<ConfigSaveResult>("PUT", "/api/config", patch, true); }
  models() { return this.call<ModelsView>("GET", "/api/models"); }
  setKey(provider: string, key: string) {
    return this.call<KeyStatus>("PUT", `/api/keys/${encodeURIComponent(provider)}`, { key });
  }
  deleteKey(provider: string) { return this.call<KeyStatus>("DELETE", `/api/keys/${encodeURIComponent(provider)}`); }
  testConnection(provider: string) {
    return this.call<ConnectionTest>("POST", `/api/keys/${encodeURIComponent(provider)}/test`);
  }
  runs(filter: RunFilter) { return this.call<RunsView>("GET", `/api/runs${this.query(filter)}`); }
  async runsCsv(filter: RunFilter): Promise<string> {
    const headers: Record<string, string> = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const res = await this.fetchImpl(`${this.base}/api/runs.csv${this.query(filter)}`, { headers });
    if (!res.ok) throw toFailure(await res.json().catch(() => ({ code: "http", message: res.statusText })), res.status);
    return res.text();
  }
  memory() { return this.call<MemoryView>("GET", "/api/memory"); }
  pipelineRun() { return this.call<ActionResult>("POST", "/api/pipeline/run"); }
  pipelinePause() { return this.call<ActionResult>("POST", "/api/pipeline/pause"); }
  pipelineResume() { return this.call<ActionResult>("POST", "/api/pipeline/resume"); }
  serverStart() { return this.call<ActionResult>("POST", "/api/server/start"); }
  serverStop() { return this.call<ActionResult>("POST", "/api/server/stop"); }
}
