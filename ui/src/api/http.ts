// HTTP backend: fetch to /api on the serving origin. The browser is signed in by an
// HttpOnly, SameSite=Strict session cookie that the server sets when the user opens the
// one-time link `/login?code=...` printed by `codex-free serve --http --ui` (or
// `codex-free token login`); the page never sees a token. The server accepts only its own
// loopback origin, so the cookie cannot be used from another site or through a tunnel.

import { ApiFailure, cleanFilter, toFailure } from "./contract";
import type { Api, Autostart, ConfigPatch } from "./contract";
// Wire types by namespace: the list of names lives once, in the Api contract.
import type * as W from "./types";

type Fetch = typeof fetch;

export class HttpApi implements Api {
  /**
   * `base` is the server's origin ("" with a custom transport); `fetchImpl` carries the
   * requests (the browser's fetch, or the Tauri window's `api` command); `kind` names it.
   */
  constructor(
    private readonly base: string,
    private readonly fetchImpl: Fetch = (...a) => fetch(...a),
    readonly kind: "http" | "tauri" = "http",
  ) {}

  private async call<T>(method: string, path: string, body?: unknown, accept422 = false): Promise<T> {
    const res = await this.send(method, path, body, accept422, "application/json");
    return (await res.json()) as T;
  }

  /** One request with the shared error handling; resolves with a successful response. */
  private async send(method: string, path: string, body: unknown, accept422: boolean, accept: string): Promise<Response> {
    const headers: Record<string, string> = { Accept: accept };
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
    if (res.ok || (accept422 && res.status === 422)) return res;
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

  private query(f: object): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(cleanFilter(f))) q.set(k, String(v));
    const s = q.toString();
    return s ? `?${s}` : "";
  }

  status() { return this.call<W.Status>("GET", "/api/status"); }
  getConfig() { return this.call<W.ConfigView>("GET", "/api/config"); }
  validateConfig(patch: ConfigPatch) { return this.call<W.ConfigSaveResult>("POST", "/api/config/validate", patch); }
  saveConfig(patch: ConfigPatch) { return this.call<W.ConfigSaveResult>("PUT", "/api/config", patch, true); }
  models() { return this.call<W.ModelsView>("GET", "/api/models"); }
  setKey(provider: string, key: string) {
    return this.call<W.KeyStatus>("PUT", `/api/keys/${encodeURIComponent(provider)}`, { key });
  }
  deleteKey(provider: string) { return this.call<W.KeyStatus>("DELETE", `/api/keys/${encodeURIComponent(provider)}`); }
  testConnection(provider: string) {
    return this.call<W.ConnectionTest>("POST", `/api/keys/${encodeURIComponent(provider)}/test`);
  }
  runs(filter: W.RunFilter) { return this.call<W.RunsView>("GET", `/api/runs${this.query(filter)}`); }
  sentRequest(sha256: string) { return this.call<W.SentRequest>("GET", `/api/sent/${encodeURIComponent(sha256)}`); }
  async runsCsv(filter: W.RunFilter): Promise<string> {
    const res = await this.send("GET", `/api/runs.csv${this.query(filter)}`, undefined, false, "text/csv");
    return res.text();
  }
  agentUsage(filter: W.AgentUsageFilter) { return this.call<W.AgentUsageView>("GET", `/api/usage${this.query(filter)}`); }
  async agentUsageCsv(filter: W.AgentUsageFilter): Promise<string> {
    const res = await this.send("GET", `/api/usage.csv${this.query(filter)}`, undefined, false, "text/csv");
    return res.text();
  }
  agentSpend() { return this.call<W.AgentSpend>("GET", "/api/usage/spend"); }
  memory() { return this.call<W.MemoryView>("GET", "/api/memory"); }
  memoryFolders() { return this.call<W.MemoryFolders>("GET", "/api/memory/folders"); }
  memoryInspect(folder: string) { return this.call<W.MemoryInspect>("GET", `/api/memory/inspect?folder=${encodeURIComponent(folder)}`); }
  memoryHistory(folder: string) { return this.call<W.HistoryView>("GET", `/api/memory/history?folder=${encodeURIComponent(folder)}`); }
  memoryCommit(folder: string, rev: string) {
    return this.call<W.CommitDiff>("GET", `/api/memory/commit?folder=${encodeURIComponent(folder)}&rev=${encodeURIComponent(rev)}`);
  }
  memoryRollback(folder: string, rev: string) { return this.call<W.ActionResult>("POST", "/api/memory/rollback", { folder, rev }); }
  memoryTidyPlan(folder: string) { return this.call<W.TidyPlanView>("GET", `/api/memory/tidy?folder=${encodeURIComponent(folder)}`); }
  memoryTidyAsk(folder: string) { return this.call<W.TidyPlanView>("POST", "/api/memory/tidy/ask", { folder }); }
  memoryTidyApply(folder: string, accepted?: string[]) { return this.call<W.ActionResult>("POST", "/api/memory/tidy", { folder, rev: null, accepted: accepted ?? null }); }
  memoryReview() { return this.call<W.ReviewView>("GET", "/api/memory/review"); }
  memoryReviewDecide(action: "accept" | "reject") { return this.call<W.ReviewView>("POST", `/api/memory/review/${action}`); }
  refusals(limit = 20) { return this.call<W.RefusalsView>("GET", `/api/audit/refusals?limit=${limit}`); }
  forecast() { return this.call<W.ForecastView>("GET", "/api/forecast"); }
  outgoingView() { return this.call<W.OutgoingView>("GET", "/api/outgoing"); }
  outgoingApprove(id: string, always: boolean) {
    return this.call<W.ActionResult>("POST", `/api/outgoing/${encodeURIComponent(id)}/approve`, { always });
  }
  outgoingApproveAll() { return this.call<W.ActionResult>("POST", "/api/outgoing/approve-all", { always: false }); }
  outgoingDeny(id: string) { return this.call<W.ActionResult>("POST", `/api/outgoing/${encodeURIComponent(id)}/deny`); }
  outgoingAllow(project: string, allow: boolean) {
    return this.call<W.ActionResult>("POST", "/api/outgoing/allow", { project, allow });
  }
  pipelineRun() { return this.call<W.ActionResult>("POST", "/api/pipeline/run"); }
  pipelinePause() { return this.call<W.ActionResult>("POST", "/api/pipeline/pause"); }
  pipelineResume() { return this.call<W.ActionResult>("POST", "/api/pipeline/resume"); }
  serverStart() { return this.call<W.ActionResult>("POST", "/api/server/start"); }
  serverStop() { return this.call<W.ActionResult>("POST", "/api/server/stop"); }
  connectView() { return this.call<W.ConnectView>("GET", "/api/connect"); }
  connectPreview(client: string, undo: boolean) {
    return this.call<W.ConnectPlanView>("GET", `/api/connect/${encodeURIComponent(client)}/preview${undo ? "?undo=true" : ""}`);
  }
  connectApply(client: string, undo: boolean, digest?: string) {
    return this.call<W.ConnectPlanView>("POST", `/api/connect/${encodeURIComponent(client)}`, { undo, digest: digest ?? null });
  }
  diagnostics() { return this.call<string>("GET", "/api/diagnostics"); }
  /** The headless server cannot register itself to start at login. */
  autostart(): Promise<Autostart> { return Promise.resolve({ available: false, enabled: false }); }
  setAutostart(_enabled: boolean): Promise<Autostart> {
    return Promise.reject(new ApiFailure({ code: "unsupported", message: "launch at login is a setting of the desktop app", fields: [] }));
  }
}
