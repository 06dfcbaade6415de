import { useEffect, useState } from "preact/hooks";
import { api, toFailure } from "../api";
import type { ActionResult, Api, ApiFailure, Fix } from "../api";
import { useLoad } from "../hooks";
import { Badge, Card, ErrorBox, Gauge } from "../components/ui";
import { formatBytes, formatInt, formatTime, formatTokens, formatUsd } from "../format";

const REFRESH_MS = 5000;

const PAGE_TITLES: Record<string, string> = { models: "Models & keys", settings: "Settings", connect: "Connect" };

/** The badge colour of a pipeline state: error states are never shown like "idle". */
function pipelineBadge(state: string): string {
  return state === "failing" || state === "no_model" || state === "cap_reached" ? "error" : state;
}

/** What fixes an error state, with a button to the page that does it. */
function FixLine({ fix, testid }: { fix: Fix; testid?: string }) {
  return (
    <p class="fix" data-testid={testid}>
      {fix.text.charAt(0).toUpperCase() + fix.text.slice(1)}.{" "}
      {fix.page && (
        <a class="button" href={`#/${fix.page}`} data-testid={testid ? `${testid}-link` : undefined}>
          Open {PAGE_TITLES[fix.page] ?? fix.page}
        </a>
      )}
    </p>
  );
}

/** "Copy diagnostic info": versions, OS, key store, sandbox, clients, last runs (no keys). */
function Diagnostics() {
  const [text, setText] = useState<string | null>(null);
  const [note, setNote] = useState("");
  const copy = async () => {
    try {
      const t = await (await api()).diagnostics();
      setText(t);
      try {
        await navigator.clipboard.writeText(t);
        setNote("Copied to the clipboard.");
      } catch {
        setNote("Select the text below and copy it (the clipboard is not available here).");
      }
    } catch (e) {
      setNote(toFailure(e).message);
    }
  };
  return (
    <Card title="Diagnostics" testid="card-diagnostics" actions={<button data-testid="copy-diagnostics" onClick={() => void copy()}>Copy diagnostic info</button>}>
      <p class="muted small">For a bug report: versions, OS, key store, sandbox, clients and the last runs. Never keys or tokens.</p>
      {note && <p class="small" data-testid="diagnostics-note">{note}</p>}
      {text && <pre class="content" data-testid="diagnostics-text">{text}</pre>}
    </Card>
  );
}

/** What the extraction backlog will cost before anything is sent (`/api/forecast`, the
 * same figures as `codex-free memories forecast`). Loaded once: it renders every waiting
 * session. */
function ForecastCard() {
  const { data: f, error, reload } = useLoad((a) => a.forecast());
  return (
    <Card title="Backlog forecast" testid="card-forecast" actions={<button onClick={() => void reload()}>Recount</button>}>
      <ErrorBox error={error} />
      {!f && !error && <p class="muted">Counting the waiting sessions…</p>}
      {f && (
        <>
          <p data-testid="forecast-summary">
            {formatInt(f.sessions)} session(s) waiting, ~{formatTokens(f.input_tokens)} input tokens
            {f.excluded > 0 && <span class="muted"> ({f.excluded} excluded by memories.exclude_paths)</span>}
          </p>
          {f.sources.length > 0 && (
            <p class="small muted">
              {f.sources.map((s) => `${s.source}: ${formatInt(s.sessions)} (~${formatTokens(s.input_tokens)})`).join(" · ")}
            </p>
          )}
          <table class="small" data-testid="forecast-models">
            <tbody>
              {f.models.map((m) => (
                <tr key={m.model}>
                  <td>
                    <code>{m.model}</code>
                    {m.configured && <span class="muted"> (configured)</span>}
                  </td>
                  <td>{m.cost_usd === null ? "price unknown" : formatUsd(m.cost_usd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="small" data-testid="forecast-month">
            This month at its pace: {formatUsd(f.month_projected_usd)} (spent {formatUsd(f.month_spent_usd)})
            {f.cap_usd !== null && ` against a cap of ${formatUsd(f.cap_usd)}`}
          </p>
          {f.cap_usd !== null && <Gauge value={f.month_projected_usd} max={f.cap_usd} label={`${formatUsd(f.month_projected_usd)} of ${formatUsd(f.cap_usd)}`} />}
        </>
      )}
    </Card>
  );
}

export function Dashboard() {
  const { data: s, error, reload } = useLoad((a) => a.status());
  const { data: audit, error: auditErr, reload: reloadAudit } = useLoad((a) => a.refusals(10));
  const [msg, setMsg] = useState<ActionResult | null>(null);
  const [actErr, setActErr] = useState<ApiFailure | null>(null);
  useEffect(() => {
    const t = setInterval(() => {
      void reload();
      void reloadAudit();
    }, REFRESH_MS);
    return () => clearInterval(t);
  }, [reload, reloadAudit]);

  const act = (f: (a: Api) => Promise<ActionResult>) => async () => {
    try {
      setMsg(await f(await api()));
      setActErr(null);
    } catch (e) {
      setActErr(toFailure(e));
    }
    void reload();
  };

  if (!s) return <ErrorBox error={error} />;
  const sp = s.spend;
  const paused = s.pipeline.state === "paused";
  return (
    <div class="grid">
      <ErrorBox error={error ?? actErr} />
      {msg && (
        <div class={`alert ${msg.ok ? "info" : "warn"}`} data-testid="action-result">
          {msg.message}
        </div>
      )}
      {s.codex_memory && (
        <div class="alert warn" data-testid="codex-memory-gap">
          {s.codex_memory} (or Connect → Codex here).
        </div>
      )}
      <Card
        title="MCP server"
        testid="card-server"
        actions={
          s.server.state === "running" ? (
            <button onClick={act((a) => a.serverStop())}>Stop</button>
          ) : (
            <button onClick={act((a) => a.serverStart())}>Start</button>
          )
        }
      >
        <p>
          <Badge kind={s.server.state}>{s.server.state}</Badge>{" "}
          {s.server.url && <code data-testid="server-url">{s.server.url}</code>}
        </p>
        <p>{s.server.clients} client(s) in the last 5 minutes</p>
        {s.server.error && (
          <>
            <p class="error-text">{s.server.error}</p>
            <FixLine fix={{ text: "free the port or pick another one (server.port), then Start", page: "settings" }} />
          </>
        )}
      </Card>
      <Card
        title="Memory pipeline"
        testid="card-pipeline"
        actions={
          <>
            <button onClick={act((a) => a.pipelineRun())}>Run now</button>
            <button onClick={act((a) => (paused ? a.pipelineResume() : a.pipelinePause()))}>
              {paused ? "Resume" : "Pause"}
            </button>
          </>
        }
      >
        {s.pipeline.state === "no_model" ? (
          <p class="error-text" data-testid="pipeline-blocked">
            {s.pipeline.message}
          </p>
        ) : (
          <p>
            <Badge kind={pipelineBadge(s.pipeline.state)}>{s.pipeline.state.replace("_", " ")}</Badge>{" "}
            <span data-testid="pipeline-message">{s.pipeline.message}</span>
          </p>
        )}
        {s.pipeline.fix && <FixLine fix={s.pipeline.fix} testid="pipeline-fix" />}
        <p data-testid="pipeline-times">
          Next run: <span data-testid="pipeline-next-run">{formatTime(s.pipeline.next_run_ms)}</span> · Last run:{" "}
          {formatTime(s.pipeline.last_run_ms)}
        </p>
      </Card>
      <Card title="Spend" testid="card-spend">
        <div class="stats">
          <div>
            <span class="stat" data-testid="spend-today">{formatUsd(sp.today_usd)}</span>
            <span class="stat-label">today</span>
          </div>
          <div>
            <span class="stat" data-testid="spend-month">{formatUsd(sp.month_usd)}</span>
            <span class="stat-label">this month</span>
          </div>
          <div>
            <span class="stat">{sp.cap_usd === null ? "no cap" : formatUsd(sp.cap_usd)}</span>
            <span class="stat-label">monthly cap</span>
          </div>
        </div>
        {sp.cap_usd !== null && (
          <Gauge value={sp.month_usd} max={sp.cap_usd} label={`${formatUsd(sp.month_usd)} of ${formatUsd(sp.cap_usd)}`} />
        )}
        {sp.cap_reached && (
          <>
            <p class="error-text">Cap reached: the pipeline makes no model calls.</p>
            <FixLine fix={{ text: "raise memories.monthly_spend_cap_usd, or wait for next month", page: "settings" }} />
          </>
        )}
        {sp.unpriced_requests > 0 && (
          <p class="muted">{sp.unpriced_requests} request(s) this month have no known price (not counted).</p>
        )}
      </Card>
      <ForecastCard />
      <Card title="Command sandbox" testid="card-sandbox">
        <p>
          <Badge kind={s.sandbox.enforced ? "running" : "error"}>{s.sandbox.enforced ? s.sandbox.mechanism : "off"}</Badge>
        </p>
        {s.sandbox.warning ? <p class="error-text">{s.sandbox.warning}</p> : <p class="muted">{s.sandbox.summary}</p>}
      </Card>
      <Card title="Key storage" testid="card-keyring">
        <p>
          <Badge kind={s.keyring.fallback ? "warn" : "running"}>{s.keyring.backend}</Badge>
        </p>
        {s.keyring.error && <p class="error-text">{s.keyring.error}</p>}
        {s.keyring.fallback && (
          <p class="muted small">
            Fix: start a Secret Service (GNOME Keyring or KWallet) in your desktop session; until then keys saved here
            are lost at logout, and a provider's environment variable (e.g. OPENAI_API_KEY) also works.
          </p>
        )}
      </Card>
      <Card title="Recent errors" testid="card-errors">
        {s.recent_errors.length === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <ul class="errors">
            {s.recent_errors.map((e, i) => (
              <li key={i}>
                <span class="muted">{formatTime(e.time_ms)}</span> <Badge kind="error">{e.source}</Badge> {e.message}
              </li>
            ))}
          </ul>
        )}
      </Card>
      <Card title="Last refusals" testid="card-refusals">
        {auditErr ? (
          <ErrorBox error={auditErr} />
        ) : !audit ? (
          <p class="muted">Loading…</p>
        ) : (
          <>
            {!audit.enabled && <p class="error-text">The audit trail is off (audit.enabled is false): no new calls are recorded.</p>}
            {audit.refusals.length === 0 ? (
              <p class="muted">No refused or failed tool calls.</p>
            ) : (
              <ul class="errors" data-testid="refusal-list">
                {audit.refusals.map((r, i) => (
                  <li key={i} data-testid="refusal">
                    <span class="muted">{formatTime(r.time_ms)}</span> <Badge kind="error">{r.code}</Badge>{" "}
                    <code>{r.tool}</code> <span class="muted small">{r.conversation}</span>
                  </li>
                ))}
              </ul>
            )}
            <p class="muted small">
              From <code>{audit.file}</code> (one line per tool call: argument shapes and sizes, never contents).
            </p>
          </>
        )}
      </Card>
      <Card title="Changed files that run later" testid="card-runs-later">
        {auditErr ? (
          <ErrorBox error={auditErr} />
        ) : !audit ? (
          <p class="muted">Loading…</p>
        ) : (audit.runs_later ?? []).length === 0 ? (
          <p class="muted">No tool call changed a Makefile, package.json, CI workflow, .envrc or editor task.</p>
        ) : (
          <>
            <ul class="errors" data-testid="runs-later-list">
              {audit.runs_later.map((r, i) => (
                <li key={i} data-testid="runs-later">
                  <span class="muted">{formatTime(r.time_ms)}</span> <Badge kind="warn">{r.tool}</Badge>{" "}
                  {r.paths.map((p) => (
                    <code key={p}>{p} </code>
                  ))}
                  <span class="muted small">{r.conversation}</span>
                </li>
              ))}
            </ul>
            <p class="muted small">
              These files are run later by other programs (make, npm, CI, direnv, your editor) outside the sandbox: review them (Show changes in
              the client, or git diff) before those run.
            </p>
          </>
        )}
      </Card>
      <Diagnostics />
      <p class="muted small">
        State home <code>{s.home}</code> · version {s.version}
      </p>
      <p class="muted small" data-testid="transcripts">
        MCP transcripts: {s.transcripts.files} file(s), {formatBytes(s.transcripts.bytes)} · each deleted {s.transcripts.retention_days} days after
        its last call once extracted
      </p>
    </div>
  );
}
