import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { api } from "../api";
import type { ApiFailure, RequestRow, RunFilter, RunRow, UsageTotals } from "../api";
import { useLoad } from "../hooks";
import { Badge, Card, ErrorBox } from "../components/ui";
import { DailyCostChart } from "../components/Chart";
import { ChoiceFilter, CsvButton, DateRange } from "../components/Filters";
import { formatDuration, formatInt, formatTime, formatTokens, formatUsd } from "../format";

type Period = "daily" | "weekly" | "monthly";

function TotalsRow({ t, testid }: { t: UsageTotals; testid?: string }) {
  return (
    <tr data-testid={testid}>
      <td>{t.label}</td>
      <td>{formatInt(t.runs)}</td>
      <td>{formatInt(t.requests)}</td>
      <td title={formatInt(t.input_tokens)}>{formatTokens(t.input_tokens)}</td>
      <td title={formatInt(t.cached_input_tokens)}>{formatTokens(t.cached_input_tokens)}</td>
      <td title={formatInt(t.output_tokens)}>{formatTokens(t.output_tokens)}</td>
      <td>
        {formatUsd(t.cost_usd)}
        {t.unpriced_requests > 0 && <span class="muted small"> + {t.unpriced_requests} unpriced</span>}
      </td>
      <td>{t.failed_requests || ""}</td>
    </tr>
  );
}

/** What one request sent: its receipt (hash, size, redactions by rule), and the sealed
 * bytes themselves when memories.keep_sent_days kept them. */
function Receipt({ q }: { q: RequestRow }) {
  const [text, setText] = useState<string | null>(null);
  const [err, setErr] = useState<ApiFailure | null>(null);
  if (!q.sent_sha256) return null;
  const rules = Object.entries(q.redactions);
  const show = async () => {
    try {
      setText((await (await api()).sentRequest(q.sent_sha256 as string)).text);
    } catch (e) {
      setErr(e as ApiFailure);
    }
  };
  return (
    <tr class="receipt" data-testid="receipt">
      <td colSpan={11} class="small">
        sent <code title={q.sent_sha256}>sha256 {q.sent_sha256.slice(0, 16)}…</code> · {formatInt(q.sent_bytes ?? 0)} bytes ·{" "}
        {rules.length === 0 ? "nothing redacted" : rules.map(([k, v]) => `${k} ×${v}`).join(", ")}
        {q.sent_kept && text === null && (
          <>
            {" "}
            <button class="small" onClick={show} data-testid="show-sent">
              show what was sent
            </button>
          </>
        )}
        {!q.sent_kept && <span class="muted"> (bytes not kept: memories.keep_sent_days)</span>}
        <ErrorBox error={err} />
        {text !== null && <pre class="content" data-testid="sent-text">{text}</pre>}
      </td>
    </tr>
  );
}

function RunLine({ r }: { r: RunRow }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <tr class="run" onClick={() => setOpen(!open)} data-testid="run-row">
        <td>
          <span class="twisty">{open ? "▾" : "▸"}</span> {formatTime(r.time_ms)}
        </td>
        <td>
          {r.phase}
          {r.trigger && <div class="muted small">{r.trigger}</div>}
        </td>
        <td>
          <code>{r.model}</code>
        </td>
        <td>{r.requests}</td>
        <td title={formatInt(r.input_tokens)}>{formatTokens(r.input_tokens)}</td>
        <td title={formatInt(r.cached_input_tokens)}>{formatTokens(r.cached_input_tokens)}</td>
        <td title={formatInt(r.output_tokens)}>{formatTokens(r.output_tokens)}</td>
        <td>{formatUsd(r.cost_usd)}</td>
        <td>{formatDuration(r.duration_ms)}</td>
        <td>
          <Badge kind={r.outcome === "ok" ? "running" : "error"}>{r.outcome}</Badge>
        </td>
        <td class="err">{r.error}</td>
      </tr>
      {open &&
        r.request_rows.map((q, i) => (
          <Fragment key={i}>
          <tr class="request">
            <td>{formatTime(q.time_ms)}</td>
            <td>{q.phase}</td>
            <td>
              <code>{q.model}</code>
            </td>
            <td>1</td>
            <td>{formatInt(q.input_tokens)}</td>
            <td>{formatInt(q.cached_input_tokens)}</td>
            <td>{formatInt(q.output_tokens)}</td>
            <td>{formatUsd(q.cost_usd)}</td>
            <td>{formatDuration(q.duration_ms)}</td>
            <td>{q.outcome}</td>
            <td class="err">{q.error}</td>
          </tr>
          <Receipt q={q} />
          </Fragment>
        ))}
    </>
  );
}

export function Runs() {
  const [filter, setFilter] = useState<RunFilter>({ since_ms: null, until_ms: null, phase: null, model: null, outcome: null });
  const [period, setPeriod] = useState<Period>("daily");
  const [csvErr, setCsvErr] = useState<ApiFailure | null>(null);
  const { data, error } = useLoad((a) => a.runs(filter), [JSON.stringify(filter)]);
  const set = (k: keyof RunFilter, v: string) => setFilter({ ...filter, [k]: v || null });


  return (
    <div class="grid">
      <ErrorBox error={error ?? csvErr} />
      <div class="filters" data-testid="filters">
        <ChoiceFilter label="Phase" value={filter.phase} options={data?.phases} onChange={(v) => set("phase", v)} testid="filter-phase" />
        <ChoiceFilter label="Model" value={filter.model} options={data?.models} onChange={(v) => set("model", v)} testid="filter-model" />
        <ChoiceFilter label="Outcome" value={filter.outcome} options={data?.outcomes} onChange={(v) => set("outcome", v)} testid="filter-outcome" />
        <DateRange onChange={(since_ms, until_ms) => setFilter({ ...filter, since_ms, until_ms })} />
        <CsvButton fetch={async () => (await api()).runsCsv(filter)} filename="codex-free-usage.csv" testid="export-csv" onError={setCsvErr} />
      </div>
      {data && (
        <>
          <div class="stats" data-testid="totals">
            <div>
              <span class="stat" data-testid="total-runs">{formatInt(data.total.runs)}</span>
              <span class="stat-label">runs</span>
            </div>
            <div>
              <span class="stat" data-testid="total-requests">{formatInt(data.total.requests)}</span>
              <span class="stat-label">requests</span>
            </div>
            <div>
              <span class="stat" data-testid="total-input" title={formatInt(data.total.input_tokens)}>
                {formatTokens(data.total.input_tokens)}
              </span>
              <span class="stat-label">input tokens ({formatTokens(data.total.cached_input_tokens)} cached)</span>
            </div>
            <div>
              <span class="stat" data-testid="total-output" title={formatInt(data.total.output_tokens)}>
                {formatTokens(data.total.output_tokens)}
              </span>
              <span class="stat-label">output tokens</span>
            </div>
            <div>
              <span class="stat" data-testid="total-cost">{formatUsd(data.total.cost_usd)}</span>
              <span class="stat-label">
                cost{data.total.unpriced_requests > 0 && ` (+ ${data.total.unpriced_requests} unpriced requests)`}
              </span>
            </div>
          </div>
          <Card title="Daily cost" testid="chart-card">
            <DailyCostChart daily={data.daily} />
          </Card>
          <Card
            title="Totals"
            testid="period-totals"
            actions={
              <div class="seg">
                {(["daily", "weekly", "monthly"] as Period[]).map((p, i) => (
                  <button key={i} class={p === period ? "active" : ""} onClick={() => setPeriod(p)} data-testid={`period-${p}`}>
                    {p === "daily" ? "day" : p === "weekly" ? "week" : "month"}
                  </button>
                ))}
              </div>
            }
          >
            <table class="table num">
              <thead>
                <tr>
                  <th>{period === "daily" ? "Day (UTC)" : period === "weekly" ? "ISO week" : "Month"}</th>
                  <th>Runs</th>
                  <th>Requests</th>
                  <th>Input</th>
                  <th>Cached</th>
                  <th>Output</th>
                  <th>Cost</th>
                  <th>Failed</th>
                </tr>
              </thead>
              <tbody>
                {[...data[period]].reverse().map((t, i) => (
                  <TotalsRow key={i} t={t} />
                ))}
                <TotalsRow t={{ ...data.total, label: "total" }} testid="totals-row" />
              </tbody>
            </table>
          </Card>
          <Card title={`Runs (${data.runs.length})`} testid="runs">
            <table class="table num runs">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>Phase</th>
                  <th>Model</th>
                  <th>Requests</th>
                  <th>Input</th>
                  <th>Cached</th>
                  <th>Output</th>
                  <th>Cost</th>
                  <th>Duration</th>
                  <th>Outcome</th>
                  <th>Error</th>
                </tr>
              </thead>
              <tbody>
                {data.runs.map((r, i) => (
                  <RunLine key={i} r={r} />
                ))}
              </tbody>
            </table>
            {data.runs.length === 0 && <p class="muted">No runs match.</p>}
          </Card>
        </>
      )}
    </div>
  );
}
