import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, toFailure } from "../api";
import type { ApiFailure, ConfigField } from "../api";
import { useLoad } from "../hooks";
import { ErrorBox } from "../components/ui";
import { checkField, getPath, sameJson, toDraft, toPatch } from "../validate";
import type { Draft } from "../validate";

const BLOCKS: { id: string; title: string; about: string }[] = [
  { id: "output", title: "Output", about: "Budgets every tool result obeys." },
  { id: "memory", title: "Task memory", about: "Notes and plans kept per project." },
  { id: "memories", title: "Memory pipeline", about: "Background extraction and consolidation of memories." },
  { id: "exec", title: "Exec", about: "What exec_command may run." },
  { id: "command", title: "Command timeouts", about: "Timeouts of exec_command." },
  { id: "projectDoc", title: "Project doc", about: "How much AGENTS.md is delivered." },
  { id: "server", title: "Server", about: "HTTP transport (takes effect at the next server start)." },
  { id: "audit", title: "Audit", about: "One line per tool call (tool, argument shapes and sizes, result size, error code; never contents)." },
];

function fmtDefault(f: ConfigField): string {
  if (f.default === null) return "none";
  if (Array.isArray(f.default)) return f.default.length ? f.default.join(", ") : "empty";
  return String(f.default);
}

function fmtRange(f: ConfigField): string {
  if (f.min === null && f.max === null) return "";
  if (f.max === null) return `≥ ${f.min}`;
  return `${f.min} – ${f.max}`;
}

/** Launch at login (desktop app only; off by default). */
function LaunchAtLogin() {
  const { data, error, reload } = useLoad((a) => a.autostart());
  const [err, setErr] = useState("");
  if (!data) return <ErrorBox error={error} />;
  return (
    <div class="field" data-testid="field-autostart">
      <label>
        <input
          type="checkbox"
          checked={data.enabled}
          disabled={!data.available}
          data-testid="autostart-toggle"
          onChange={(e) =>
            void (async () => {
              try {
                await (await api()).setAutostart((e.target as HTMLInputElement).checked);
                setErr("");
              } catch (x) {
                setErr(toFailure(x).message);
              }
              void reload();
            })()
          }
        />{" "}
        <strong>Launch at login</strong> <span class="muted">(starts in the tray, window closed)</span>
      </label>
      {!data.available && <div class="meta">Only the desktop app can start at login; this page is served by the headless server.</div>}
      {err && <div class="field-error">{err}</div>}
    </div>
  );
}

export function Settings() {
  const { data, error, reload } = useLoad((a) => a.getConfig());
  const [drafts, setDrafts] = useState<Record<string, Draft>>({});
  const [serverErrors, setServerErrors] = useState<Record<string, string>>({});
  const [saveErr, setSaveErr] = useState<ApiFailure | null>(null);
  const [notice, setNotice] = useState("");
  const [block, setBlock] = useState("output");
  const timer = useRef<number | undefined>(undefined);

  useEffect(() => {
    if (!data) return;
    const d: Record<string, Draft> = {};
    for (const f of data.fields) d[f.key] = toDraft(f, getPath(data.effective, f.key));
    setDrafts(d);
    setServerErrors({});
  }, [data]);

  const checked = useMemo(() => {
    const out: Record<string, ReturnType<typeof checkField>> = {};
    if (data) for (const f of data.fields) if (f.key in drafts) out[f.key] = checkField(f, drafts[f.key]);
    return out;
  }, [data, drafts]);

  // Only fields whose parsed value differs from the effective config are sent.
  const changes = useMemo(() => {
    const c: Record<string, unknown> = {};
    if (!data) return c;
    for (const f of data.fields) {
      const r = checked[f.key];
      if (r && r.ok && !sameJson(r.value, getPath(data.effective, f.key) ?? null)) c[f.key] = r.value;
    }
    return c;
  }, [data, checked]);
  const localErrors = Object.entries(checked).filter(([, r]) => !r.ok).length;

  // Cross-field rules (e.g. default timeout ≤ max timeout) are checked by the server as you type.
  useEffect(() => {
    clearTimeout(timer.current);
    if (!data || localErrors || Object.keys(changes).length === 0) {
      setServerErrors({});
      return;
    }
    timer.current = window.setTimeout(async () => {
      try {
        const r = await (await api()).validateConfig(toPatch(changes));
        setServerErrors(Object.fromEntries(r.errors.map((e) => [e.key, e.message])));
      } catch {
        /* the save will report it */
      }
    }, 300);
  }, [changes, localErrors, data]);

  const save = async () => {
    setNotice("");
    try {
      const r = await (await api()).saveConfig(toPatch(changes));
      if (!r.saved) {
        setServerErrors(Object.fromEntries(r.errors.map((e) => [e.key, e.message])));
        setNotice("Not saved: fix the marked fields.");
        return;
      }
      setSaveErr(null);
      setNotice(
        r.restart_required.length > 0
          ? `Saved to ${data?.path}. Restart the server to apply ${r.restart_required.join(", ")}; the rest applies to the next tool call.`
          : `Saved to ${data?.path}. The server applies it to the next tool call.`,
      );
      await reload();
    } catch (e) {
      setSaveErr(toFailure(e));
    }
  };

  if (!data) return <ErrorBox error={error} />;
  const dirty = Object.keys(changes).length;
  const blockFields = data.fields.filter((f) => f.block === block);
  const anyError = localErrors > 0 || Object.keys(serverErrors).length > 0;
  return (
    <div>
      <LaunchAtLogin />
      <ErrorBox error={error ?? saveErr} />
      {data.warnings.map((w) => (
        <div key={w} class="alert warn">{w}</div>
      ))}
      <div class="tabs">
        {BLOCKS.map((b) => {
          const errs = data.fields.filter((f) => f.block === b.id && (checked[f.key]?.ok === false || serverErrors[f.key])).length;
          return (
            <button class={b.id === block ? "tab active" : "tab"} onClick={() => setBlock(b.id)} data-testid={`tab-${b.id}`}>
              {b.title}
              {errs > 0 && <span class="dot" />}
            </button>
          );
        })}
      </div>
      <p class="muted">{BLOCKS.find((b) => b.id === block)?.about}</p>
      <form
        class="fields"
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        {blockFields.map((f) => {
          const r = checked[f.key];
          const err = r && !r.ok ? r.error : serverErrors[f.key];
          const id = `f-${f.key.replace(/\./g, "-")}`;
          const changed = f.key in changes;
          return (
            <div class={`field ${err ? "invalid" : ""} ${changed ? "changed" : ""}`} data-testid={`field-${f.key}`}>
              <label for={id}>
                <code>{f.key.split(".").slice(1).join(".")}</code>
                <span class="help">{f.help}</span>
              </label>
              <div class="input">
                {f.kind === "boolean" ? (
                  <input
                    id={id}
                    type="checkbox"
                    checked={Boolean(drafts[f.key])}
                    onChange={(e) => setDrafts({ ...drafts, [f.key]: (e.target as HTMLInputElement).checked })}
                  />
                ) : f.kind === "choice" ? (
                  <select
                    id={id}
                    value={String(drafts[f.key] ?? "")}
                    onChange={(e) => setDrafts({ ...drafts, [f.key]: (e.target as HTMLSelectElement).value })}
                  >
                    {f.choices.map((c) => (
                      <option key={c} value={c}>{c}</option>
                    ))}
                  </select>
                ) : (
                  <input
                    id={id}
                    type="text"
                    inputMode={f.kind === "integer" ? "numeric" : f.kind === "number" ? "decimal" : "text"}
                    value={String(drafts[f.key] ?? "")}
                    placeholder={f.nullable ? "default" : ""}
                    aria-invalid={err ? "true" : "false"}
                    onInput={(e) => setDrafts({ ...drafts, [f.key]: (e.target as HTMLInputElement).value })}
                  />
                )}
                {f.unit && <span class="unit">{f.unit}</span>}
              </div>
              <div class="meta">
                default {fmtDefault(f)}
                {fmtRange(f) && <> · range {fmtRange(f)}</>}
                {f.kind === "list" && f.choices.length > 0 && <> · any of {f.choices.join(", ")}</>}
                {f.restart && <> · applies after a restart</>}
              </div>
              {err && (
                <div class="field-error" role="alert" data-testid={`error-${f.key}`}>
                  {err}
                </div>
              )}
            </div>
          );
        })}
        <div class="savebar">
          <button type="submit" class="primary" disabled={dirty === 0 || anyError} data-testid="save">
            Save {dirty > 0 ? `(${dirty} change${dirty > 1 ? "s" : ""})` : ""}
          </button>
          <button
            type="button"
            disabled={dirty === 0}
            onClick={() => {
              const d: Record<string, Draft> = {};
              for (const f of data.fields) d[f.key] = toDraft(f, getPath(data.effective, f.key));
              setDrafts(d);
            }}
          >
            Discard
          </button>
          {notice && (
            <span class="notice" data-testid="save-notice">
              {notice}
            </span>
          )}
        </div>
      </form>
      <details class="muted small">
        <summary>What the file holds now</summary>
        <pre data-testid="overrides">{JSON.stringify(data.overrides, null, 2)}</pre>
      </details>
    </div>
  );
}
