import type { ComponentChildren } from "preact";
import type { ApiFailure } from "../api";

export function ErrorBox({ error }: { error: ApiFailure | null }) {
  if (!error) return null;
  const hint =
    error.code === "unauthorized"
      ? " — open the one-time login link printed by `codex-free serve --http --ui` (or run `codex-free token login` for a new one)."
      : "";
  return (
    <div class="alert error" role="alert" data-testid="error">
      <strong>{error.code}</strong>: {error.message}
      {hint}
    </div>
  );
}

export function Card(props: { title: string; children: ComponentChildren; testid?: string; actions?: ComponentChildren }) {
  return (
    <section class="card" data-testid={props.testid}>
      <header>
        <h2>{props.title}</h2>
        {props.actions && <div class="actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

/** A horizontal gauge: value vs limit; turns amber over 80% and red over 100%. */
export function Gauge(props: { value: number; max: number | null; label: string; testid?: string }) {
  const share = props.max ? props.value / props.max : 0;
  const cls = share > 1 ? "over" : share > 0.8 ? "warn" : "ok";
  return (
    <div class="gauge" data-testid={props.testid} title={props.label}>
      <div class="gauge-bar">
        <div class={`gauge-fill ${cls}`} style={{ width: `${Math.min(100, share * 100)}%` }} />
      </div>
      <span class="gauge-label">{props.label}</span>
    </div>
  );
}

export function Badge({ kind, children }: { kind: string; children: ComponentChildren }) {
  return <span class={`badge ${kind}`}>{children}</span>;
}
