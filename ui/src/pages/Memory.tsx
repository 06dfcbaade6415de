import { useState } from "preact/hooks";
import type { MemoryFile, ProjectMemory } from "../api";
import { useLoad } from "../hooks";
import { Badge, Card, ErrorBox, Gauge } from "../components/ui";
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

export function Memory() {
  const { data, error } = useLoad((a) => a.memory());
  if (!data) return <ErrorBox error={error} />;
  return (
    <div class="grid">
      <p class="muted">
        Read-only. Pipeline memory folder: <code>{data.memories_dir}</code>
      </p>
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
