// The only front-end module that talks to the back end. Two implementations of one
// interface: HTTP (`fetch` to /api, for browsers and `codex-free serve --http --ui`) and
// Tauri (`invoke`, inside the desktop app's window). The choice is made once at start.
// Wire types come from Rust via ts-rs (./types), so both sides share one definition.

import type { Api } from "./contract";

export * from "./contract";
export type * from "./types";

/** True inside the Tauri window. */
export function inTauri(w: object = globalThis): boolean {
  return "__TAURI_INTERNALS__" in w;
}

let current: Api | null = null;

/** The backend for this page, chosen on first use. */
export async function api(): Promise<Api> {
  if (current) return current;
  if (inTauri()) {
    const { TauriApi } = await import("./tauri");
    current = new TauriApi();
  } else {
    const { HttpApi } = await import("./http");
    current = new HttpApi(location.origin);
  }
  return current;
}

/** Replace the backend (tests). */
export function setApi(a: Api | null): void {
  current = a;
}
