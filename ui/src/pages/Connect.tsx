import { useState } from "preact/hooks";
import { api, toFailure } from "../api";
import type { ApiFailure, ConnectClient, ConnectPlanView } from "../api";
import { useLoad } from "../hooks";
import { Badge, Card, ErrorBox } from "../components/ui";

const TITLES: Record<string, string> = {
  codex: "Codex CLI",
  claude: "Claude Code",
  pi: "pi",
  chatgpt: "ChatGPT",
};

function yes(b: boolean, on: string, off: string) {
  return <Badge kind={b ? "ok" : "stopped"}>{b ? on : off}</Badge>;
}

/** One client: state, then preview → apply (or undo) of the exact diff. */
function ClientCard({ c, reload }: { c: ConnectClient; reload: () => void }) {
  const [plan, setPlan] = useState<ConnectPlanView | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [done, setDone] = useState<string>("");
  const preview = async (undo: boolean) => {
    setError(null);
    setDone("");
    try {
      setPlan(await (await api()).connectPreview(c.client, undo));
    } catch (e) {
      setError(toFailure(e));
    }
  };
  const apply = async () => {
    if (!plan) return;
    setError(null);
    try {
      const r = await (await api()).connectApply(c.client, plan.undo, plan.digest);
      setDone(r.message);
      setPlan(null);
      reload();
    } catch (e) {
      setError(toFailure(e));
    }
  };
  const chatgpt = c.client === "chatgpt";
  return (
    <Card
      title={TITLES[c.client] ?? c.client}
      testid={`connect-${c.client}`}
      actions={
        <>
          <button onClick={() => void preview(false)} data-testid={`connect-preview-${c.client}`}>
            {chatgpt ? "Show steps" : "Preview connect"}
          </button>
          {c.recorded && (
            <button onClick={() => void preview(true)} data-testid={`connect-undo-${c.client}`}>
              Preview undo
            </button>
          )}
        </>
      }
    >
      <p>
        {!chatgpt && yes(c.installed, "installed", "not installed")}{" "}
        {c.has_mcp && yes(c.connected, "connected", "not connected")}{" "}
        {!chatgpt && yes(c.linked, "memory linked", "memory not linked")}
      </p>
      {c.last_refresh && <p class="muted small">memory block refreshed {c.last_refresh}</p>}
      {c.files.length > 0 && (
        <p class="muted small">
          {c.files.map((f) => (
            <span key={f}>
              <code>{f}</code>{" "}
            </span>
          ))}
        </p>
      )}
      {c.problem && <p class="error-text">{c.problem}</p>}
      <ErrorBox error={error} />
      {done && <p data-testid={`connect-done-${c.client}`}>{done}</p>}
      {plan && (
        <div data-testid={`connect-plan-${c.client}`}>
          <p>{plan.message}</p>
          {plan.diff && <pre class="content diff">{plan.diff}</pre>}
          {!chatgpt && plan.files.length > 0 && (
            <button class="primary" onClick={() => void apply()} data-testid={`connect-apply-${c.client}`}>
              {plan.undo ? "Apply undo" : "Apply"}
            </button>
          )}{" "}
          <button onClick={() => setPlan(null)}>Close</button>
        </div>
      )}
    </Card>
  );
}

export function Connect() {
  const { data, error, reload } = useLoad((a) => a.connectView());
  if (!data) return <ErrorBox error={error} />;
  return (
    <div class="grid">
      <p class="muted">
        Registers Codex Free with your coding agents and links the memory summary into the instructions file each
        agent reads (rewritten after every consolidation). Every change is shown as a diff first; a backup is kept
        beside each file and undo restores it. Server command: <code>{data.server_command}</code>
      </p>
      <ErrorBox error={error} />
      {data.codex_memory && (
        <div class="alert warn" data-testid="codex-memory-gap">
          {data.codex_memory}
        </div>
      )}
      <div class="two">
        {data.clients.map((c) => (
          <ClientCard key={c.client} c={c} reload={() => void reload()} />
        ))}
      </div>
    </div>
  );
}
