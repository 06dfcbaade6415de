// Usage: what every coding agent (Codex CLI, Claude Code, pi) and the pipeline itself
// used and cost, from the same rows and report code as `codex-free usage ... --json`.
// Unknown prices are shown as "price unknown" with their token counts, never as $0; a range
// with no request at all costs $0.00. Days, weeks and months are those of the chosen time
// zone (the browser's by default, or UTC), named in the table's heading.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import type { AgentTotals, AgentUsageBucket, AgentUsageFilter, ApiFailure } from "../api";
import { useLoad } from "../hooks";
import { Card, ErrorBox } from "../components/ui";
import { browserZone, ChoiceFilter, CsvButton, DateRange } from "../components/Filters";
import { formatInt, formatPercent, formatTime, formatTokens, formatUsd } from "../format";

type Gran = "day" | "week" | "month";
type Split = "agent" | "model";

const COLORS = ["#2563eb", "#d97706", "#059669", "#7c3aed", "#db2777", "#0891b2", "#65a30d", "#dc2626", "#475569"];

/** "$1.23", "price unknown", or "$1.23 + 4 unpriced"; "$0.00" without any request (nothing
 *  was used: the cost is known to be zero). */
export function costCell(t: AgentTotals): string {
  if (t.requests === 0) return "$0.00";
  if (t.cost_usd === null) return "price unknown";
  return t.unpriced_requests > 0 ? `${formatUsd(t.cost_usd)} + ${t.unpriced_requests} unpriced` : formatUsd(t.cost_usd);
}

type Keyed = { key: string; totals: AgentTotals };

/** A per-agent or per-model map as rows in key order (the server sends sorted maps). */
function keyed(m: Record<string, AgentTotals>): Keyed[] {
  return Object.entries(m).map(([key, totals]) => ({ key, totals }));
}

/** Stacked cost bars per period, one colour per agent or model (CSS only, no canvas). */
function StackedCost({ buckets, split }: { buckets: AgentUsageBucket[]; split: Split }) {
  const keys: string[] = [];
  for (const b of buckets) for (const k of keyed(split === "agent" ? b.by_agent : b.by_model)) if (!keys.includes(k.key)) keys.push(k.key);
  const max = Math.max(0, ...buckets.map((b) => b.totals.cost_usd ?? 0));
  if (buckets.length === 0) return <p class="muted">No usage in this range.</p>;
  const color = (k: string) => COLORS[keys.indexOf(k) % COLORS.length];
  return (
    <div data-testid="stacked-chart">
      <div class="stack-chart">
        {buckets.map((b) => {
          const parts = keyed(split === "agent" ? b.by_agent : b.by_model);
          return (
            <div class="stack-col" key={b.period} title={`${b.period}: ${costCell(b.totals)}`}>
              <div class="stack-bar">
                {parts.map((p) => (
                  <div
                    key={p.key}
                    class="stack-seg"
                    title={`${p.key}: ${costCell(p.totals)}`}
                    style={{ height: `${max > 0 ? ((p.totals.cost_usd ?? 0) / max) * 100 : 0}%`, background: color(p.key) }}
                  />
                ))}
              </div>
              <div class="stack-label">{b.period}</div>
              {b.totals.unpriced_requests > 0 && <div class="stack-unpriced" title="requests without a price">?{b.totals.unpriced_requests}</div>}
            </div>
          );
        })}
      </div>
      <div class="legend">
        {keys.map((k) => (
          <span key={k}>
            <i style={{ background: color(k) }} /> {k}
          </span>
        ))}
        <span class="muted small">bar height: priced cost; ?N = requests with price unknown</span>
      </div>
    </div>
  );
}

function Countdown({ endMs, nowMs }: { endMs: number; nowMs: number }) {
  // The server's clock at load, advanced by the browser's.
  const [t0] = useState(() => Date.now());
  const [tick, setTick] = useState(Date.now());
  useEffect(() => {
    const id = setInterval(() => setTick(Date.now()), 1000);
    return () => clearInterval(id);
  }, []);
  const left = Math.max(0, endMs - (nowMs + (tick - t0)));
  const h = Math.floor(left / 3_600_000);
  const m = Math.floor((left % 3_600_000) / 60_000);
  const s = Math.floor((left % 60_000) / 1000);
  return (
    <span data-testid="block-countdown">
      {h}:{String(m).padStart(2, "0")}:{String(s).padStart(2, "0")}
    </span>
  );
}

/**
 * The token columns, the same for every agent and named as in `codex-free usage` and its
 * `--json` fields: input is the uncached input; total = input + cache read + cache write +
 * output (reasoning is part of output).
 */
export const TOKEN_COLUMNS: ReadonlyArray<readonly [string, keyof AgentTotals]> = [
  ["Input", "input_tokens"],
  ["Cache read", "cache_read_tokens"],
  ["Cache write", "cache_write_tokens"],
  ["Output", "output_tokens"],
  ["Reasoning", "reasoning_tokens"],
  ["Total", "total_tokens"],
];

const COLUMN_HELP = "Input = uncached input; total = input + cache read + cache write + output (reasoning is part of output).";

function TokenHeads() {
  return (
    <>
      {TOKEN_COLUMNS.map(([label]) => (
        <th key={label} title={COLUMN_HELP}>{label}</th>
      ))}
    </>
  );
}

function TokenCells({ t }: { t: AgentTotals }) {
  return (
    <>
      {TOKEN_COLUMNS.map(([label, k]) => (
        <td key={label} data-col={k}>{formatInt(t[k] as number)}</td>
      ))}
    </>
  );
}

function TotalsLine({ label, t, testid }: { label: string; t: AgentTotals; testid?: string }) {
  return (
    <tr data-testid={testid}>
      <td>{label}</td>
      <td>{formatInt(t.requests)}</td>
      <TokenCells t={t} />
      <td>{formatPercent(t.cache_hit_rate)}</td>
      <td>{costCell(t)}</td>
    </tr>
  );
}

export function Usage() {
  const [localZone] = useState(browserZone);
  const [filter, setFilter] = useState<AgentUsageFilter>({ since_ms: null, until_ms: null, agent: null, model: null, granularity: "day", timezone: localZone });
  const [split, setSplit] = useState<Split>("agent");
  const [csvErr, setCsvErr] = useState<ApiFailure | null>(null);
  const { data, error } = useLoad((a) => a.agentUsage(filter), [JSON.stringify(filter)]);
  const set = (k: keyof AgentUsageFilter, v: string) => setFilter({ ...filter, [k]: v || null });
  const gran = (filter.granularity ?? "day") as Gran;
  // Times in the chosen zone: the browser's own, or UTC (offset 0).
  const fmtTime = (ms: number) => formatTime(ms, filter.timezone === "UTC" ? 0 : undefined);
  const block = data?.active_block;
  const burn = block?.burn;

  return (
    <div class="grid">
      <ErrorBox error={error ?? csvErr} />
      {data?.import_error && (
        <div class="alert error" role="alert">
          Import failed (showing what is stored): {data.import_error}
        </div>
      )}
      <div class="filters" data-testid="usage-filters">
        <ChoiceFilter label="Agent" value={filter.agent} options={data?.agents} onChange={(v) => set("agent", v)} testid="usage-filter-agent" />
        <ChoiceFilter label="Model" value={filter.model} options={data?.models} onChange={(v) => set("model", v)} testid="usage-filter-model" />
        <label>
          Time zone
          <select value={filter.timezone ?? localZone} onChange={(e) => setFilter({ ...filter, timezone: (e.target as HTMLSelectElement).value })} data-testid="usage-timezone">
            {[...new Set([localZone, "UTC"])].map((z) => (
              <option key={z} value={z}>{z === localZone && z !== "UTC" ? `${z} (this browser)` : z}</option>
            ))}
          </select>
        </label>
        <DateRange onChange={(since_ms, until_ms) => setFilter({ ...filter, since_ms, until_ms })} sinceTestid="usage-since" zone={filter.timezone ?? localZone} />
        <CsvButton fetch={async () => (await api()).agentUsageCsv(filter)} filename="codex-free-agent-usage.csv" testid="usage-export-csv" onError={setCsvErr} />
      </div>
      {data && (
        <>
          <div class="stats" data-testid="usage-totals">
            <div>
              <span class="stat" data-testid="usage-total-cost">{data.total.requests === 0 ? "$0.00" : formatUsd(data.total.cost_usd)}</span>
              <span class="stat-label">
                cost{data.total.unpriced_requests > 0 && ` (+ ${data.total.unpriced_requests} requests, price unknown)`}
              </span>
            </div>
            <div>
              <span class="stat" data-testid="usage-total-requests">{formatInt(data.total.requests)}</span>
              <span class="stat-label">requests</span>
            </div>
            <div>
              <span class="stat" data-testid="usage-total-input" title={formatInt(data.total.input_tokens)}>
                {formatTokens(data.total.input_tokens)}
              </span>
              <span class="stat-label">input tokens (uncached)</span>
            </div>
            <div>
              <span class="stat" data-testid="usage-total-output" title={formatInt(data.total.output_tokens)}>
                {formatTokens(data.total.output_tokens)}
              </span>
              <span class="stat-label">output tokens</span>
            </div>
            <div>
              <span class="stat" data-testid="usage-cache-hit">{formatPercent(data.total.cache_hit_rate)}</span>
              <span class="stat-label">cache-hit rate (share of all input read from cache)</span>
            </div>
          </div>
          <Card title="Active 5-hour block" testid="usage-block">
            {block && burn ? (
              <div class="stats">
                <div>
                  <span class="stat"><Countdown endMs={block.end_ms} nowMs={data.now_ms} /></span>
                  <span class="stat-label">left (ends {fmtTime(block.end_ms)})</span>
                </div>
                <div>
                  <span class="stat" data-testid="block-cost">{costCell(block.totals)}</span>
                  <span class="stat-label">{formatTokens(block.totals.total_tokens)} tokens so far</span>
                </div>
                <div>
                  <span class="stat">{formatInt(burn.tokens_per_min)}</span>
                  <span class="stat-label">tokens/min · {formatUsd(burn.usd_per_hour)}/h</span>
                </div>
                <div>
                  <span class="stat">{formatUsd(burn.projected_usd)}</span>
                  <span class="stat-label">projected at block end ({formatTokens(burn.projected_tokens)} tokens)</span>
                </div>
              </div>
            ) : (
              <p class="muted" data-testid="no-block">No active block: no request in the last 5 hours.</p>
            )}
          </Card>
          <Card
            title="Cost"
            testid="usage-chart"
            actions={
              <>
                <div class="seg">
                  {(["agent", "model"] as Split[]).map((p) => (
                    <button key={p} class={p === split ? "active" : ""} onClick={() => setSplit(p)} data-testid={`split-${p}`}>
                      by {p}
                    </button>
                  ))}
                </div>
                <div class="seg">
                  {(["day", "week", "month"] as Gran[]).map((g) => (
                    <button key={g} class={g === gran ? "active" : ""} onClick={() => setFilter({ ...filter, granularity: g })} data-testid={`gran-${g}`}>
                      {g}
                    </button>
                  ))}
                </div>
              </>
            }
          >
            <StackedCost buckets={data.buckets} split={split} />
          </Card>
          {data.unknown_prices.length > 0 && (
            <Card title="Price unknown" testid="usage-unknown">
              <p class="muted small">These requests are not in the costs above. Add a price to price them (stored rows are repriced at the next import).</p>
              <table class="table num">
                <thead>
                  <tr><th>Model</th><th>Agents</th><th>Requests</th><TokenHeads /><th>How to add a price</th></tr>
                </thead>
                <tbody>
                  {data.unknown_prices.map((u) => (
                    <tr key={u.model} data-testid="unknown-row">
                      <td><code>{u.model}</code></td>
                      <td>{u.agents.join(", ")}</td>
                      <td>{formatInt(u.totals.requests)}</td>
                      <TokenCells t={u.totals} />
                      <td class="small"><code>{u.how_to_price}</code></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </Card>
          )}
          <Card title={`Totals per ${gran}`} testid="usage-periods">
            <table class="table num">
              <thead>
                <tr><th data-testid="usage-period-heading">{gran === "day" ? "Day" : gran === "week" ? "ISO week" : "Month"} ({data.timezone})</th><th>Requests</th><TokenHeads /><th>Cache hits</th><th>Cost</th></tr>
              </thead>
              <tbody>
                {[...data.buckets].reverse().flatMap((b) => [
                  <TotalsLine key={b.period} label={b.period} t={b.totals} testid={`period-${b.period}`} />,
                  ...keyed(b.by_agent).map((a) => <TotalsLine key={`${b.period}-${a.key}`} label={`  ${a.key}`} t={a.totals} testid={`period-${b.period}-${a.key}`} />),
                ])}
                <TotalsLine label="total" t={data.total} testid="usage-total-row" />
              </tbody>
            </table>
          </Card>
          <Card title="By agent and model" testid="usage-split">
            <table class="table num">
              <thead>
                <tr><th>Agent / model</th><th>Requests</th><TokenHeads /><th>Cache hits</th><th>Cost</th></tr>
              </thead>
              <tbody>
                {keyed(data.by_agent).map((a) => <TotalsLine key={a.key} label={a.key} t={a.totals} testid={`agent-${a.key}`} />)}
                {keyed(data.by_model).map((a) => <TotalsLine key={`m-${a.key}`} label={a.key} t={a.totals} />)}
              </tbody>
            </table>
          </Card>
          <Card title="Top sessions" testid="usage-sessions">
            <table class="table num">
              <thead>
                <tr><th>Agent</th><th>Session</th><th>Project</th><th>Models</th><th>First request</th><th>Last request</th><TokenHeads /><th>Cost</th></tr>
              </thead>
              <tbody>
                {data.top_sessions.map((s) => (
                  <tr key={`${s.agent}-${s.session_id}`} data-testid="session-row">
                    <td>{s.agent}</td>
                    <td><code title={s.session_id}>{s.session_id.slice(0, 13)}</code></td>
                    <td>{s.project ?? "—"}</td>
                    <td class="small">{s.models.join(", ")}</td>
                    <td>{fmtTime(s.first_ms)}</td>
                    <td>{fmtTime(s.last_ms)}</td>
                    <TokenCells t={s.totals} />
                    <td>{costCell(s.totals)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {data.top_sessions.length === 0 && <p class="muted">No sessions match.</p>}
          </Card>
        </>
      )}
    </div>
  );
}
