import { useState } from "preact/hooks";
import { api, toFailure } from "../api";
import type { ApiFailure, MemoryFile, ProjectMemory } from "../api";
import { useLoad } from "../hooks";
import { Badge, Card, ErrorBox, Gauge } from "../components/ui";
import { MemoryVersions } from "../components/MemoryVersions";
import { TidyPlan } from "../components/TidyPlan";
import type { TidyPlanView } from "../api";
import { formatBytes, formatInt, formatTime } from "../format";

function FileView({ f }: { f: MemoryFile }) {
  const [open, setOpen] = useState(false);
  return (
    <Card title={f.name} testid={`memfile-${f.name}`}>
      {!f.exists ? (
        <p class="muted">Not written yet.</p>
      ) : (
        <>
          <Gauge value={f.lines} max={f.max_lines} label={`${formatInt(f.lines)} / ${formatInt(f.max_lines)} lines`} testid={`gauge-lines-${f.name}`} />
          <Gauge value={f.bytes} max={f.max_bytes} label={`${formatBytes(f.bytes)} / ${formatBytes(f.max_bytes)}`} testid={`gauge-bytes-${f.name}`} />
          {(f.lines > f.max_lines || f.bytes > f.max_bytes) && <p class="error-text">Over budget: the next consolidation should shrink it.</p>}
          <button onClick={() => setOpen(!open)}>{open ? "Hide" : "Show"} content</button>
          {open && <pre class="content">{f.content}{f.truncated && "\n… (cut here; the whole file is in the memory folder)"}</pre>}
        </>
      )}
    </Card>
  );
}

function ProjectView({ p }: { p: ProjectMemory }) {
  return (
    <Card title={p.root ?? p.slug} testid={`project-${p.slug}`}>
      <p class="muted small">
        <code>{p.slug}</code> · updated {formatTime(p.updated_ms)}
      </p>
      {p.error && <p class="error-text">{p.error}</p>}
      <Gauge value={p.notes_bytes} max={p.max_bytes} label={`notes ${formatBytes(p.notes_bytes)} / ${formatBytes(p.max_bytes)}`} />
      <h3>Plan</h3>
      {p.plan.length === 0 ? (
        <p class="muted">No plan.</p>
      ) : (
        <ol class="plan">
          {p.plan.map((s, i) => (
            <li key={i}>
              <Badge kind={s.status === "completed" ? "running" : s.status === "in_progress" ? "idle" : "stopped"}>{s.status.replace("_", " ")}</Badge>{" "}
              {s.step}
            </li>
          ))}
        </ol>
      )}
      <h3>Notes</h3>
      {p.notes.length === 0 ? (
        <p class="muted">No notes.</p>
      ) : (
        <table class="table">
          <tbody>
            {p.notes.map((n, i) => (
              <tr key={i}>
                <td>
                  <code>{n.key}</code>
                </td>
                <td class="pre">{n.value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}

/** Review queue: the consolidation held by `memories.review`, with accept / reject. */
function ReviewQueue({ onChange }: { onChange: () => void }) {
  const { data, error, reload } = useLoad((a) => a.memoryReview());
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<ApiFailure | null>(null);
  const decide = async (action: "accept" | "reject") => {
    try {
      const r = await (await api()).memoryReviewDecide(action);
      setErr(null);
      // The queue is reloaded before the outcome is shown, so the card never says "accepted"
      // beside the consolidation it has just accepted.
      await reload();
      setMsg(r.done ?? null);
      onChange();
    } catch (e) {
      setErr(toFailure(e));
    }
  };
  if (!data) return <ErrorBox error={error} />;
  return (
    <Card title="Review queue" testid="memory-review">
      {!data.enabled && <p class="muted small">Review is off (memories.review): every consolidation is used at once.</p>}
      {msg && <p data-testid="review-done">{msg}</p>}
      <ErrorBox error={err} />
      {!data.pending ? (
        <p class="muted">Nothing waits for review.</p>
      ) : (
        <>
          <p>
            A consolidation waits: sessions get the summary of <code>{data.accepted?.slice(0, 10) ?? "(nothing accepted yet)"}</code> until you accept{" "}
            <code>{data.head?.slice(0, 10)}</code>.
          </p>
          <p class="small">{data.changes.join(", ")}</p>
          <pre class="content" data-testid="review-diff">{data.patch}</pre>
          <button data-testid="review-accept" onClick={() => void decide("accept")}>Accept</button>{" "}
          <button data-testid="review-reject" onClick={() => void decide("reject")}>Reject</button>
        </>
      )}
    </Card>
  );
}

/** One memory folder: layers, lint findings, history with diffs and rollback, tidy. */
function FolderTools({ folder, onChange }: { folder: string; onChange: () => void }) {
  const insp = useLoad((a) => a.memoryInspect(folder), [folder]);
  const hist = useLoad((a) => a.memoryHistory(folder), [folder]);
  const [diff, setDiff] = useState<{ id: string; text: string } | null>(null);
  const [plan, setPlan] = useState<TidyPlanView | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<ApiFailure | null>(null);
  const act = async (f: () => Promise<void>) => {
    try {
      await f();
      setErr(null);
    } catch (e) {
      setErr(toFailure(e));
    }
  };
  const refresh = async () => {
    await insp.reload();
    await hist.reload();
    onChange();
  };
  const layers = new Map<string, { files: number; lines: number; bytes: number }>();
  for (const f of insp.data?.layers ?? []) {
    const l = layers.get(f.layer) ?? { files: 0, lines: 0, bytes: 0 };
    l.files += 1;
    l.lines += f.lines;
    l.bytes += f.bytes;
    layers.set(f.layer, l);
  }
  return (
    <>
      <ErrorBox error={err} />
      {msg && <pre class="content" data-testid="memory-action-result">{msg}</pre>}
      <div class="two">
        <Card title="Layers" testid="memory-layers">
          {insp.data && (
            <table class="table">
              <tbody>
                {[...layers.entries()].map(([k, v]) => (
                  <tr key={k} data-testid={`layer-${k}`}>
                    <td>{k}</td>
                    <td>{formatInt(v.files)} file(s)</td>
                    <td>{formatInt(v.lines)} lines</td>
                    <td>{formatBytes(v.bytes)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <p class="muted small">loaded = MEMORY.md (in every session), daily = progress, archive/evidence = kept and searchable, never injected.</p>
        </Card>
        <Card title={`Lint findings (${insp.data?.findings.length ?? 0})`} testid="memory-lint">
          {insp.data?.lint_error && <p class="muted">{insp.data.lint_error}</p>}
          {insp.data?.findings.length === 0 && !insp.data?.lint_error && <p class="muted">No findings.</p>}
          <ul class="findings">
            {insp.data?.findings.slice(0, 200).map((f, i) => (
              <li key={i} data-testid="lint-finding">
                <Badge kind={f.severity === "error" ? "stopped" : "idle"}>{f.kind}</Badge>{" "}
                <code>
                  {f.file}:{f.line}
                </code>{" "}
                {f.message}
                <div class="small muted">suggested: {f.suggestion}</div>
              </li>
            ))}
          </ul>
        </Card>
      </div>
      <Card title="Tidy" testid="memory-tidy">
        <button
          data-testid="tidy-plan"
          onClick={() =>
            void act(async () => {
              const p = await (await api()).memoryTidyPlan(folder);
              setPlan(p);
            })
          }
        >
          Show tidy plan
        </button>{" "}
        {plan !== null && (
          <TidyPlan
            key={plan.text}
            plan={plan}
            onAsk={() =>
              void act(async () => {
                setPlan(await (await api()).memoryTidyAsk(folder));
              })
            }
            onApply={(accepted) =>
              void act(async () => {
                const r = await (await api()).memoryTidyApply(folder, accepted);
                setMsg(r.message);
                setPlan(null);
                await refresh();
              })
            }
          />
        )}
      </Card>
      <Card title="History" testid="memory-history">
        {hist.data?.commits.length === 0 && <p class="muted">No git history in this folder.</p>}
        <table class="table">
          <tbody>
            {hist.data?.commits.map((c, i) => (
              <tr key={c.id} data-testid="history-commit">
                <td>
                  <code>{c.id.slice(0, 10)}</code>
                </td>
                <td>{formatTime(c.time_ms)}</td>
                <td>
                  {c.subject} <span class="muted small">+{c.insertions} −{c.deletions}</span>
                </td>
                <td>
                  <button
                    data-testid="history-diff"
                    onClick={() =>
                      void act(async () => {
                        const d = await (await api()).memoryCommit(folder, c.id);
                        setDiff({ id: c.id, text: d.text });
                      })
                    }
                  >
                    Diff
                  </button>{" "}
                  {folder === "home" && i > 0 && (
                    <button
                      data-testid="history-rollback"
                      onClick={() =>
                        void act(async () => {
                          const r = await (await api()).memoryRollback(folder, c.id);
                          setMsg(r.message);
                          await refresh();
                        })
                      }
                    >
                      Roll back to here
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {diff && <pre class="content" data-testid="history-diff-text">{diff.text}</pre>}
      </Card>
    </>
  );
}

export function Memory() {
  const folders = useLoad((a) => a.memoryFolders());
  const [folder, setFolder] = useState("home");
  // A change made in one card reloads the others, never itself: a card that remounted
  // would lose the message saying what it just did.
  const [tick, setTick] = useState(0);
  const [reviewTick, setReviewTick] = useState(0);
  const changed = () => setTick((n) => n + 1);
  const reviewed = () => setReviewTick((n) => n + 1);
  return (
    <div class="grid">
      <ReviewQueue key={`review-${tick}`} onChange={reviewed} />
      <div>
        <label>
          Memory folder{" "}
          <select data-testid="memory-folder" value={folder} onChange={(e) => setFolder((e.target as HTMLSelectElement).value)}>
            {(folders.data?.folders ?? [{ id: "home", label: "Codex Free (this state home)", path: "", git: true }]).map((f) => (
              <option key={f.id} value={f.id}>
                {f.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <FolderTools key={`${folder}-${reviewTick}`} folder={folder} onChange={changed} />
      <MemoryFilesAndProjects key={`files-${tick}-${reviewTick}`} />
    </div>
  );
}

export function MemoryFilesAndProjects() {
  const { data, error } = useLoad((a) => a.memory());
  if (!data) return <ErrorBox error={error} />;
  return (
    <div class="grid">
      <MemoryVersions state={data.versions} />
      <div class="two">
        {data.files.map((f, i) => (
          <FileView key={i} f={f} />
        ))}
      </div>
      <h2>Task memory per project ({data.projects.length})</h2>
      {data.projects.length === 0 && <p class="muted">No project has notes or a plan yet.</p>}
      {data.projects.map((p, i) => (
        <ProjectView key={i} p={p} />
      ))}
    </div>
  );
}
