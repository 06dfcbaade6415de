// The contract every backend implements (the `Api` interface) and the helpers both
// backends share. Its own module so that http.ts and tauri.ts depend on it, not on
// index.ts, which loads them: no import cycle.

import type {
  ActionResult,
  AgentSpend,
  AgentUsageFilter,
  AgentUsageView,
  ApiError,
  ConfigSaveResult,
  ConfigView,
  ConnectionTest,
  ConnectPlanView,
  ConnectView,
  FieldError,
  KeyStatus,
  SentRequest,
  MemoryView,
  OutgoingView,
  ForecastView,
  CommitDiff,
  HistoryView,
  MemoryFolders,
  MemoryInspect,
  ReviewView,
  TidyPlanView,
  ModelsView,
  RefusalsView,
  RunFilter,
  RunsView,
  Status,
} from "./types";

/** A config change, nested like codex.config.json: `{ output: { maxFileLines: 50 } }`. */
export type ConfigPatch = Record<string, Record<string, unknown>>;

/** Every call the UI makes. */
export interface Api {
  readonly kind: "http" | "tauri";
  status(): Promise<Status>;
  getConfig(): Promise<ConfigView>;
  /** Checks a change without saving. */
  validateConfig(patch: ConfigPatch): Promise<ConfigSaveResult>;
  /** Saves a change; resolves with `saved: false` and per-field errors when invalid. */
  saveConfig(patch: ConfigPatch): Promise<ConfigSaveResult>;
  models(): Promise<ModelsView>;
  setKey(provider: string, key: string): Promise<KeyStatus>;
  deleteKey(provider: string): Promise<KeyStatus>;
  testConnection(provider: string): Promise<ConnectionTest>;
  runs(filter: RunFilter): Promise<RunsView>;
  runsCsv(filter: RunFilter): Promise<string>;
  /** The sealed bytes of a sent request kept by memories.keep_sent_days, by its receipt hash. */
  sentRequest(sha256: string): Promise<SentRequest>;
  /** What the coding agents and the pipeline used and cost (imports the transcripts first). */
  agentUsage(filter: AgentUsageFilter): Promise<AgentUsageView>;
  /** The rows behind agentUsage as CSV, one request a line. */
  agentUsageCsv(filter: AgentUsageFilter): Promise<string>;
  /** Today's and this month's spend across agents and the pipeline. */
  agentSpend(): Promise<AgentSpend>;
  memory(): Promise<MemoryView>;
  /** Memory folders found: this state home's, Codex's, Claude Code's auto-memory. */
  memoryFolders(): Promise<MemoryFolders>;
  /** Layers and lint findings of one folder (no model call). */
  memoryInspect(folder: string): Promise<MemoryInspect>;
  memoryHistory(folder: string): Promise<HistoryView>;
  memoryCommit(folder: string, rev: string): Promise<CommitDiff>;
  /** Restore `rev` as a new commit (this state home's folder only). */
  memoryRollback(folder: string, rev: string): Promise<ActionResult>;
  /** What a tidy would move; writes nothing. */
  memoryTidyPlan(folder: string): Promise<TidyPlanView>;
  /** Back up, move the accepted units (all when absent), commit and read back. */
  /** Send the model requests the plan estimated (memories.tidy_ask_model); returns the plan with the answers. */
  memoryTidyAsk(folder: string): Promise<TidyPlanView>;
  memoryTidyApply(folder: string, accepted?: string[]): Promise<ActionResult>;
  memoryReview(): Promise<ReviewView>;
  memoryReviewDecide(action: "accept" | "reject"): Promise<ReviewView>;
  /** The newest failed or refused tool calls of the audit trail. */
  refusals(limit?: number): Promise<RefusalsView>;
  /** What the extraction backlog will cost (sessions, tokens, cost per model, month pace vs cap). */
  forecast(): Promise<ForecastView>;
  /** The approval queue (memories.approval): waiting requests with their sealed text. */
  outgoingView(): Promise<OutgoingView>;
  /** Approve one waiting request; `always` also always allows its project. */
  outgoingApprove(id: string, always: boolean): Promise<ActionResult>;
  outgoingApproveAll(): Promise<ActionResult>;
  /** Deny one: never sent, its session's memory turned off. */
  outgoingDeny(id: string): Promise<ActionResult>;
  /** Always allow a project (or take it back). */
  outgoingAllow(project: string, allow: boolean): Promise<ActionResult>;
  pipelineRun(): Promise<ActionResult>;
  pipelinePause(): Promise<ActionResult>;
  pipelineResume(): Promise<ActionResult>;
  serverStart(): Promise<ActionResult>;
  serverStop(): Promise<ActionResult>;
  /** Each coding agent: installed, connected, linked to the memory. */
  connectView(): Promise<ConnectView>;
  /** The exact diff connect (or undo) would write; writes nothing. */
  connectPreview(client: string, undo: boolean): Promise<ConnectPlanView>;
  /** Apply connect (or undo); `digest` from the preview refuses a plan that changed since. */
  connectApply(client: string, undo: boolean, digest?: string): Promise<ConnectPlanView>;
  /** Plain-text diagnostic info for a bug report (never keys or tokens). */
  diagnostics(): Promise<string>;
  /** Launch at login: only the desktop app can; the headless server says it is unavailable. */
  autostart(): Promise<Autostart>;
  setAutostart(enabled: boolean): Promise<Autostart>;
}

/** Launch-at-login state. */
export interface Autostart {
  available: boolean;
  enabled: boolean;
}

/** A failed call: stable `code` (match on it, never on the message), message, field errors. */
export class ApiFailure extends Error {
  readonly code: string;
  readonly fields: FieldError[];
  readonly status: number;
  constructor(e: ApiError, status = 0) {
    super(e.message);
    this.name = "ApiFailure";
    this.code = e.code;
    this.fields = e.fields ?? [];
    this.status = status;
  }
}

/** Turn anything thrown by a backend into an ApiFailure. */
export function toFailure(e: unknown, status = 0): ApiFailure {
  if (e instanceof ApiFailure) return e;
  if (e && typeof e === "object" && "code" in e && "message" in e) {
    const o = e as { code: unknown; message: unknown; fields?: unknown };
    return new ApiFailure(
      { code: String(o.code), message: String(o.message), fields: Array.isArray(o.fields) ? (o.fields as FieldError[]) : [] },
      status,
    );
  }
  const message = e instanceof Error ? e.message : String(e);
  return new ApiFailure({ code: "network", message, fields: [] }, status);
}

/** Drop empty filter values so they are not sent. */
export function cleanFilter<F extends object>(f: F): Partial<F> {
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(f)) {
    if (v !== null && v !== undefined && v !== "") out[k] = v as string | number;
  }
  return out as Partial<F>;
}

