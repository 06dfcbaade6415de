// Tauri backend: each call is one command of src-tauri (thin wrappers over the same Rust
// ApiService the HTTP routes use). Rejections carry the Rust ApiError object.

import { invoke as tauriInvoke } from "@tauri-apps/api/core";
import { cleanFilter, toFailure } from "./contract";
import type { Api, ConfigPatch } from "./contract";
import type {
  ActionResult,
  ConfigSaveResult,
  ConfigView,
  ConnectionTest,
  ConnectPlanView,
  ConnectView,
  KeyStatus,
  MemoryView,
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

type Invoke = (cmd: string, args?: Record<string, unknown>) => Promise<unknown>;

export class TauriApi implements Api {
  readonly kind = "tauri" as const;
  constructor(private readonly invokeImpl: Invoke = tauriInvoke) {}

  private async call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
    try {
      return (await this.invokeImpl(cmd, args)) as T;
    } catch (e) {
      throw toFailure(e);
    }
  }

  status() { return this.call<Status>("status"); }
  getConfig() { return this.call<ConfigView>("get_config"); }
  validateConfig(patch: ConfigPatch) { return this.call<ConfigSaveResult>("validate_config", { patch }); }
  saveConfig(patch: ConfigPatch) { return this.call<ConfigSaveResult>("save_config", { patch }); }
  models() { return this.call<ModelsView>("models"); }
  setKey(provider: string, key: string) { return this.call<KeyStatus>("set_key", { provider, key }); }
  deleteKey(provider: string) { return this.call<KeyStatus>("delete_key", { provider }); }
  testConnection(provider: string) { return this.call<ConnectionTest>("test_connection", { provider }); }
  runs(filter: RunFilter) { return this.call<RunsView>("runs", { filter: cleanFilter(filter) }); }
  runsCsv(filter: RunFilter) { return this.call<string>("runs_csv", { filter: cleanFilter(filter) }); }
  memory() { return this.call<MemoryView>("memory"); }
  memoryFolders() { return this.call<MemoryFolders>("memory_folders"); }
  memoryInspect(folder: string) { return this.call<MemoryInspect>("memory_inspect", { folder }); }
  memoryHistory(folder: string) { return this.call<HistoryView>("memory_history", { folder }); }
  memoryCommit(folder: string, rev: string) { return this.call<CommitDiff>("memory_commit", { folder, rev }); }
  memoryRollback(folder: string, rev: string) { return this.call<ActionResult>("memory_rollback", { folder, rev }); }
  memoryTidyPlan(folder: string) { return this.call<TidyPlanView>("memory_tidy_plan", { folder }); }
  memoryTidyApply(folder: string) { return this.call<ActionResult>("memory_tidy_apply", { folder }); }
  memoryReview() { return this.call<ReviewView>("memory_review"); }
  memoryReviewDecide(action: "accept" | "reject") { return this.call<ReviewView>("memory_review_decide", { action }); }
  refusals(limit = 20) { return this.call<RefusalsView>("refusals", { limit }); }
  pipelineRun() { return this.call<ActionResult>("pipeline_run"); }
  pipelinePause() { return this.call<ActionResult>("pipeline_pause"); }
  pipelineResume() { return this.call<ActionResult>("pipeline_resume"); }
  serverStart() { return this.call<ActionResult>("server_start"); }
  serverStop() { return this.call<ActionResult>("server_stop"); }
  connectView() { return this.call<ConnectView>("connect_view"); }
  connectPreview(client: string, undo: boolean) { return this.call<ConnectPlanView>("connect_preview", { client, undo }); }
  connectApply(client: string, undo: boolean, digest?: string) {
    return this.call<ConnectPlanView>("connect_apply", { client, request: { undo, digest: digest ?? null } });
  }
}
