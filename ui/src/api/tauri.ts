// Tauri backend: the same requests as the HTTP backend (one list of endpoints, in
// http.ts and on the Rust side in crates/server/src/api/http.rs), carried by one Tauri
// command, `api`, which runs each request in process through the server's own /api router.
// Only launch-at-login, which the headless server cannot do, has its own commands.

import { invoke as tauriInvoke } from "@tauri-apps/api/core";
import { toFailure } from "./contract";
import type { Autostart } from "./contract";
import { HttpApi } from "./http";

type Invoke = (cmd: string, args?: Record<string, unknown>) => Promise<unknown>;

/** What the `api` command answers (`codex_free_server::api::http::Dispatched`). */
interface Dispatched {
  status: number;
  content_type: string;
  body: string;
}

/** A `fetch` over the `api` command: the HTTP backend's requests, answered in process. */
export function invokeFetch(invokeImpl: Invoke): typeof fetch {
  return async (input, init) => {
    const path = typeof input === "string" ? input : input instanceof URL ? input.pathname + input.search : input.url;
    const raw = init?.body;
    const body = typeof raw === "string" ? (JSON.parse(raw) as unknown) : null;
    const r = (await invokeImpl("api", { method: init?.method ?? "GET", path, body })) as Dispatched;
    return new Response(r.status === 204 ? null : r.body, { status: r.status, headers: { "Content-Type": r.content_type } });
  };
}

export class TauriApi extends HttpApi {
  constructor(private readonly invokeImpl: Invoke = tauriInvoke) {
    super("", invokeFetch(invokeImpl), "tauri");
  }

  override async autostart(): Promise<Autostart> {
    try {
      return (await this.invokeImpl("autostart_get")) as Autostart;
    } catch (e) {
      throw toFailure(e);
    }
  }

  override async setAutostart(enabled: boolean): Promise<Autostart> {
    try {
      return (await this.invokeImpl("autostart_set", { enabled })) as Autostart;
    } catch (e) {
      throw toFailure(e);
    }
  }
}
