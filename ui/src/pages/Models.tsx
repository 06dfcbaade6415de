import { useState } from "preact/hooks";
import { api, toFailure } from "../api";
import type { ApiFailure, ConnectionTest, ModelInfo, ProviderInfo } from "../api";
import { useLoad } from "../hooks";
import { Badge, Card, ErrorBox } from "../components/ui";
import { formatInt, formatPerMtok } from "../format";

function KeyRow({ p, onChange }: { p: ProviderInfo; onChange: () => void }) {
  const [key, setKey] = useState("");
  const [err, setErr] = useState<ApiFailure | null>(null);
  const [test, setTest] = useState<ConnectionTest | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (f: () => Promise<unknown>) => {
    setBusy(true);
    try {
      await f();
      setErr(null);
    } catch (e) {
      setErr(toFailure(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <tr data-testid={`provider-${p.id}`}>
      <td>
        <strong>{p.name}</strong>
        <div class="muted small">
          <code>{p.id}</code> · {p.base_url}
        </div>
      </td>
      <td data-testid={`key-state-${p.id}`}>
        {!p.needs_key ? (
          <span class="muted">no key needed</span>
        ) : p.key.source === "none" ? (
          <span class="muted">no key ({p.key.env_var} not set)</span>
        ) : (
          <>
            <Badge kind={p.key.source === "keyring" ? "running" : "idle"}>{p.key.source === "keyring" ? "keyring" : p.key.env_var}</Badge>{" "}
            <code data-testid={`key-hint-${p.id}`}>{p.key.hint}</code>
          </>
        )}
      </td>
      <td>
        {p.needs_key && (
          <form
            class="inline"
            onSubmit={(e) => {
              e.preventDefault();
              void run(async () => {
                await (await api()).setKey(p.id, key);
                setKey("");
                onChange();
              });
            }}
          >
            <input
              type="password"
              autocomplete="off"
              placeholder="paste API key"
              value={key}
              onInput={(e) => setKey((e.target as HTMLInputElement).value)}
              data-testid={`key-input-${p.id}`}
            />
            <button type="submit" disabled={busy || key.trim() === ""} data-testid={`key-save-${p.id}`}>
              Save
            </button>
            {p.key.source === "keyring" && (
              <button
                type="button"
                disabled={busy}
                onClick={() =>
                  void run(async () => {
                    await (await api()).deleteKey(p.id);
                    onChange();
                  })
                }
              >
                Delete
              </button>
            )}
          </form>
        )}
        <button
          type="button"
          disabled={busy}
          data-testid={`key-test-${p.id}`}
          onClick={() => void run(async () => setTest(await (await api()).testConnection(p.id)))}
        >
          Test connection
        </button>
        {test && (
          <div class={test.ok ? "ok-text" : "error-text"} data-testid={`key-test-result-${p.id}`}>
            {test.message}
          </div>
        )}
        {err && (
          <div class="field-error" role="alert">
            {err.message}
          </div>
        )}
      </td>
    </tr>
  );
}

/** The two pipeline stages whose model is picked here: config key and label. */
const STAGES = [
  ["extract_model", "Extraction (phase 1)"],
  ["consolidation_model", "Consolidation (phase 2)"],
] as const;

function StagePicker(props: {
  stage: "extract_model" | "consolidation_model";
  label: string;
  value: string | null;
  models: ModelInfo[];
  fallback: string | null;
  onSaved: () => void;
}) {
  const [value, setValue] = useState(props.value ?? "");
  const [err, setErr] = useState("");
  const [saved, setSaved] = useState(false);
  const known = props.models.find((m) => m.id === value);
  const save = async () => {
    try {
      const r = await (await api()).saveConfig({ memories: { [props.stage]: value.trim() === "" ? null : value.trim() } });
      if (!r.saved) {
        setErr(r.errors.map((e) => e.message).join("; "));
        return;
      }
      setErr("");
      setSaved(true);
      props.onSaved();
    } catch (e) {
      setErr(toFailure(e).message);
    }
  };
  return (
    <div class="field" data-testid={`stage-${props.stage}`}>
      <label>
        <strong>{props.label}</strong> <code>memories.{props.stage}</code>
      </label>
      <div class="input">
        <input
          list={`models-${props.stage}`}
          value={value}
          placeholder={props.fallback ? `default (${props.fallback})` : "default model"}
          onInput={(e) => {
            setValue((e.target as HTMLInputElement).value);
            setSaved(false);
          }}
        />
        <datalist id={`models-${props.stage}`}>
          {props.models.map((m, i) => (
            <option key={i} value={m.id} />
          ))}
        </datalist>
        <button onClick={() => void save()}>Use</button>
      </div>
      <div class="meta">
        {known
          ? `in ${formatPerMtok(known.input_per_mtok_usd)} · out ${formatPerMtok(known.output_per_mtok_usd)} · context ${
              known.context_window ? formatInt(known.context_window) + " tokens" : "unknown"
            }`
          : value
            ? "not in the price table: its cost will show as unknown"
            : "empty = the default model"}
      </div>
      {err && <div class="field-error">{err}</div>}
      {saved && <div class="ok-text">Saved.</div>}
    </div>
  );
}

/** Sets both stages to `id` (a small model serves extraction and consolidation alike). */
function UseButton({ id, current, onSaved }: { id: string; current: string | null; onSaved: () => void }) {
  const [err, setErr] = useState("");
  if (current === id) return <Badge kind="running">in use</Badge>;
  return (
    <>
      <button
        data-testid={`use-${id}`}
        onClick={() =>
          void (async () => {
            try {
              const r = await (await api()).saveConfig({ memories: { extract_model: id, consolidation_model: id } });
              setErr(r.saved ? "" : r.errors.map((e) => e.message).join("; "));
              if (r.saved) onSaved();
            } catch (e) {
              setErr(toFailure(e).message);
            }
          })()
        }
      >
        Use
      </button>
      {err && <div class="field-error">{err}</div>}
    </>
  );
}

export function Models() {
  const { data, error, reload } = useLoad((a) => a.models());
  const [q, setQ] = useState("");
  if (!data) return <ErrorBox error={error} />;
  const models = data.models.filter((m) => m.id.toLowerCase().includes(q.toLowerCase()));
  return (
    <div class="grid">
      <ErrorBox error={error} />
      <Card title="Key storage" testid="keyring">
        <p>
          Keys are stored in <Badge kind={data.keyring.fallback ? "warn" : "running"}>{data.keyring.backend}</Badge> and are
          never shown again (only the last 4 characters).
        </p>
        {data.keyring.fallback && (
          <p class="error-text">
            Fallback in use{data.keyring.error ? `: ${data.keyring.error}` : ""}. Keys here are lost at logout or reboot.
          </p>
        )}
        {!data.keyring.fallback && data.keyring.error && <p class="error-text">{data.keyring.error}</p>}
      </Card>
      <Card title="Cheap choices" testid="cheap">
        <p class="muted">
          The pipeline reads a lot and writes little, so a small model is enough. Pick one, save its provider's key
          below, then Test connection (one tiny request; its cost is shown and logged).
        </p>
        <table class="table num">
          <thead>
            <tr>
              <th>Model</th>
              <th>Input / 1M</th>
              <th>Output / 1M</th>
              <th>Context</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {data.local.flatMap((l) =>
              l.models.slice(0, 5).map((m) => (
                <tr key={m} data-testid={`local-${m}`}>
                  <td>
                    <code>{m}</code> <Badge kind="running">local</Badge>
                    <div class="muted small">{l.base_url}</div>
                  </td>
                  <td>free</td>
                  <td>free</td>
                  <td>-</td>
                  <td>
                    <UseButton id={m} current={data.extract_model} onSaved={() => void reload()} />
                  </td>
                </tr>
              )),
            )}
            {data.cheap.map((c) => (
              <tr key={c.id} data-testid={`cheap-${c.id}`}>
                <td>
                  <code>{c.id}</code>
                </td>
                <td>{formatPerMtok(c.input_per_mtok_usd)}</td>
                <td>{formatPerMtok(c.output_per_mtok_usd)}</td>
                <td>{c.context_window ? formatInt(c.context_window) : "unknown"}</td>
                <td>
                  <UseButton id={c.id} current={data.extract_model} onSaved={() => void reload()} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <p class="muted small" data-testid="price-table-source">
          Prices: {data.price_table_source}. Entries under <code>memories.prices</code> override them.
        </p>
        {data.local.length === 0 && (
          <p class="muted small">
            No local model server answers on 127.0.0.1 (Ollama on 11434, LM Studio on 1234). Start one to use a free
            local model.
          </p>
        )}
      </Card>
      <Card title="Providers" testid="providers">
        <table class="table">
          <thead>
            <tr>
              <th>Provider</th>
              <th>Key</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {data.providers.map((p) => (
              <KeyRow key={p.id} p={p} onChange={() => void reload()} />
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="Model per stage" testid="stages">
        {STAGES.map(([stage, label]) => (
          <StagePicker
            key={stage}
            stage={stage}
            label={label}
            value={data[stage]}
            models={data.models}
            fallback={data.default_model}
            onSaved={() => void reload()}
          />
        ))}
      </Card>
      <Card
        title={`Models and prices (${data.models.length})`}
        testid="models"
        actions={<input placeholder="filter" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />}
      >
        {data.models.length === 0 ? (
          <p class="muted">No price table is loaded in this build; any provider/model-id can still be entered above.</p>
        ) : (
          <div class="scroll">
          <table class="table num">
            <thead>
              <tr>
                <th>Model</th>
                <th>Input</th>
                <th>Cached input</th>
                <th>Output</th>
                <th>Context</th>
              </tr>
            </thead>
            <tbody>
              {models.slice(0, 300).map((m, i) => (
                <tr key={i}>
                  <td>
                    <code>{m.id}</code>
                  </td>
                  <td>{formatPerMtok(m.input_per_mtok_usd)}</td>
                  <td>{formatPerMtok(m.cached_input_per_mtok_usd)}</td>
                  <td>{formatPerMtok(m.output_per_mtok_usd)}</td>
                  <td>{m.context_window ? formatInt(m.context_window) : "unknown"}</td>
                </tr>
              ))}
            </tbody>
          </table>
          </div>
        )}
      </Card>
    </div>
  );
}
