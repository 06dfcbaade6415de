import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { api } from "../api";
import type { ApiFailure, OutgoingRequest } from "../api";
import { useLoad } from "../hooks";
import { Badge, Card, ErrorBox } from "../components/ui";
import { formatInt, formatTime, formatTokens, formatUsd } from "../format";

/** The markers the outgoing gate leaves where it removed something (never the secret). */
const MARKERS = /(\[REDACTED_SECRET\]|\[private: removed\])/g;

/** `text` with each redaction marker highlighted. */
function Marked({ text }: { text: string }) {
  const parts = text.split(MARKERS);
  return (
    <>
      {parts.map((p, i) =>
        i % 2 === 1 ? (
          <mark class="redaction" data-testid="redaction" key={i}>
            {p}
          </mark>
        ) : (
          <Fragment key={i}>{p}</Fragment>
        ),
      )}
    </>
  );
}

/** The sealed request's texts, in order (system, then each message), as they leave. */
function sections(sealed: string): { label: string; text: string }[] {
  try {
    const v = JSON.parse(sealed) as { system?: string; messages?: { role: string; content?: string }[] };
    const out = [{ label: "system", text: v.system ?? "" }];
    for (const m of v.messages ?? []) out.push({ label: m.role, text: m.content ?? "" });
    return out;
  } catch {
    return [{ label: "request", text: sealed }];
  }
}

function RequestCard({ r, onDone }: { r: OutgoingRequest; onDone: (msg: string) => void }) {
  const [open, setOpen] = useState(false);
  const [err, setErr] = useState<ApiFailure | null>(null);
  const act = async (f: () => Promise<{ message: string }>) => {
    try {
      onDone((await f()).message);
    } catch (e) {
      setErr(e as ApiFailure);
    }
  };
  const rules = Object.entries(r.redactions);
  const project = r.project || "(no project)";
  return (
    <div class="outgoing-request" data-testid="outgoing-request" data-id={r.id}>
      <div class="outgoing-head">
        <div>
          <Badge kind={r.status === "approved" ? "running" : "warn"}>{r.status}</Badge> <code>{r.id}</code> · session{" "}
          <code>{r.thread_id}</code> ({r.source}) in <code data-testid="outgoing-project">{project}</code> → <code>{r.model}</code>
          <div class="muted small">
            queued {formatTime(r.created_ms)} ·{" "}
            {r.reason === "new_source" ? "first request from this project/agent" : "every request waits"} · {r.version}
          </div>
        </div>
        {r.status === "waiting" && (
          <div class="actions">
            <button onClick={() => act(async () => (await api()).outgoingApprove(r.id, false))} data-testid="approve">
              Approve
            </button>
            <button onClick={() => act(async () => (await api()).outgoingApprove(r.id, true))} data-testid="approve-always">
              Always allow {project}
            </button>
            <button class="danger" onClick={() => act(async () => (await api()).outgoingDeny(r.id))} data-testid="deny">
              Deny
            </button>
          </div>
        )}
      </div>
      <div class="small" data-testid="outgoing-figures">
        <span title={formatInt(r.input_tokens)} data-testid="outgoing-tokens">
          ~{formatTokens(r.input_tokens)} input tokens
        </span>{" "}
        · input {formatUsd(r.input_cost_usd)} (at most <span data-testid="outgoing-cost">{formatUsd(r.max_cost_usd)}</span> with{" "}
        {formatInt(r.max_output_tokens ?? 0)} output tokens) · {formatInt(r.bytes)} bytes ·{" "}
        <code title={r.sha256} data-testid="outgoing-sha">
          sha256 {r.sha256.slice(0, 16)}…
        </code>{" "}
        · {rules.length === 0 ? "nothing redacted" : rules.map(([k, v]) => `${k} ×${v}`).join(", ")}
      </div>
      <button class="small" onClick={() => setOpen(!open)} data-testid="outgoing-toggle">
        {open ? "hide the text" : "show exactly what would be sent"}
      </button>
      <ErrorBox error={err} />
      {open &&
        sections(r.text).map((s, i) => (
          <div key={i}>
            <div class="muted small">{s.label}</div>
            <pre class="content" data-testid="outgoing-text">
              <Marked text={s.text} />
            </pre>
          </div>
        ))}
    </div>
  );
}

export function Outgoing() {
  const { data, error, reload } = useLoad((a) => a.outgoingView());
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<ApiFailure | null>(null);
  const done = (m: string) => {
    setMsg(m);
    void reload();
  };
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p class="muted">Loading…</p>;
  const waiting = data.requests.filter((r) => r.status === "waiting");
  const approveAll = async () => {
    try {
      done((await (await api()).outgoingApproveAll()).message);
    } catch (e) {
      setErr(e as ApiFailure);
    }
  };
  const disallow = async (project: string) => {
    try {
      done((await (await api()).outgoingAllow(project, false)).message);
    } catch (e) {
      setErr(e as ApiFailure);
    }
  };
  return (
    <>
      <Card
        title="Waiting for approval"
        testid="card-outgoing"
        actions={
          waiting.length > 1 && (
            <button onClick={approveAll} data-testid="approve-all">
              Approve all ({waiting.length})
            </button>
          )
        }
      >
        <p class="small">
          memories.approval: <code data-testid="approval-mode">{data.mode}</code>
          {data.mode === "off" && " — requests are sent without waiting; set it in Settings to review them first."}
          {" "}Waiting requests are stored sealed (redacted, exactly as they would leave) and never count against the spend cap; an
          approved one is checked against the cap and the context window when the next run sends it.
        </p>
        {msg && (
          <div class="alert info" data-testid="outgoing-message">
            {msg}
          </div>
        )}
        <ErrorBox error={err} />
        {data.requests.length === 0 && (
          <p class="muted" data-testid="outgoing-empty">
            Nothing is waiting.
          </p>
        )}
        {data.requests.map((r) => (
          <RequestCard key={r.id} r={r} onDone={done} />
        ))}
      </Card>
      {data.always_allowed.length > 0 && (
        <Card title="Always allowed projects" testid="card-allowed">
          <ul>
            {data.always_allowed.map((p) => (
              <li key={p} data-testid="allowed-project">
                <code>{p || "(no project)"}</code>{" "}
                <button class="small" onClick={() => disallow(p)}>
                  stop allowing
                </button>
              </li>
            ))}
          </ul>
        </Card>
      )}
    </>
  );
}
