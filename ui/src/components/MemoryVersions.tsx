import type { RunBrief, VersionState, VersionsState } from "../api";
import { Badge, Card } from "./ui";

function run(r: RunBrief | null) {
  if (!r) return <span class="muted">none</span>;
  return (
    <span title={r.error ?? undefined}>
      <Badge kind={r.outcome === "ok" ? "running" : r.outcome === "running" ? "idle" : "stopped"}>{r.outcome}</Badge> {r.started_at}
    </span>
  );
}

function role(v: VersionState) {
  if (v.served) return <Badge kind="running">served</Badge>;
  if (v.written) return <Badge kind="idle">written, not served</Badge>;
  return <Badge kind="stopped">not running</Badge>;
}

function summary(v: VersionState) {
  if (!v.summary_exists) return <span class="muted">no summary yet</span>;
  if (v.summary_problems.length === 0) return <span>valid</span>;
  return <span class="error-text">invalid: {v.summary_problems.join("; ")}</span>;
}

/**
 * Which memory version new sessions are served, and each version's state side by side
 * (both rows always; with dual-write both pipelines run). V2 shows its readiness, which
 * never switches the served version: `memories.version` does, at the next start.
 */
export function MemoryVersions({ state }: { state: VersionsState }) {
  return (
    <Card title="Memory versions" testid="memory-versions">
      <p data-testid="memory-versions-served">
        Serving <strong>{state.served}</strong>
        {state.dual_write ? " — dual-write on: both pipelines run on the same sessions" : " — dual-write off: only the served version's pipeline runs"}
      </p>
      {state.pending_restart && (
        <p class="error-text" data-testid="memory-versions-pending">
          Restart pending: {state.pending_restart}
        </p>
      )}
      {state.caveats.map((c, i) => (
        <p class="muted small" key={i} data-testid="memory-versions-caveat">
          {c}
        </p>
      ))}
      <table class="table">
        <thead>
          <tr>
            <th>version</th>
            <th>role</th>
            <th>sessions with output</th>
            <th>phase-1 jobs</th>
            <th>last extraction</th>
            <th>last consolidation</th>
            <th>summary</th>
            <th>readiness</th>
          </tr>
        </thead>
        <tbody>
          {state.versions.map((v) => (
            <tr key={v.version} data-testid={`memory-version-${v.version}`}>
              <td>
                <code title={v.folder}>{v.version}</code>
              </td>
              <td>{role(v)}</td>
              <td>{v.database_exists ? v.with_output : <span class="muted">never ran</span>}</td>
              <td>
                {v.jobs_pending + v.jobs_running} waiting, {v.jobs_done} done, {v.jobs_retrying} retrying, {v.jobs_exhausted} out of retries
              </td>
              <td>{run(v.last_phase1)}</td>
              <td>{run(v.last_phase2)}</td>
              <td>{summary(v)}</td>
              <td>
                {v.readiness ? (
                  <span data-testid={`memory-version-${v.version}-readiness`}>
                    {v.readiness.ready ? "ready" : "not ready"} — {v.readiness.consolidated_threads} of {v.readiness.minimum} consolidated threads
                  </span>
                ) : (
                  <span class="muted">—</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Card>
  );
}
