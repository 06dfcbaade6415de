import { useState } from "preact/hooks";
import type { TidyPlanView, TidyUnitView } from "../api";
import { formatUsd } from "../format";
import { Badge } from "./ui";

/** The plan's groups, in the order a reader checks them. */
const GROUPS: { id: string; title: string }[] = [
  { id: "kept", title: "Kept loaded" },
  { id: "on_demand", title: "On demand (topic files)" },
  { id: "daily", title: "To daily/" },
  { id: "archive", title: "To archive/" },
  { id: "merged", title: "Merged" },
  { id: "dropped", title: "Dropped (exact duplicates)" },
];

/** Groups with more units than this start folded (a real bloated memory has hundreds). */
const OPEN_MAX = 20;

/** Units that would leave the loaded file: what the user accepts or not. */
function moves(u: TidyUnitView): boolean {
  return u.group !== "kept";
}

/**
 * A tidy plan unit by unit, grouped kept / on demand / daily / archive / merged, with the
 * model's estimated cost for the undecided units and a checkbox per unit that would move
 * (all accepted at first); `onApply` gets the accepted units' keys.
 */
export function TidyPlan({ plan, onApply, onAsk }: { plan: TidyPlanView; onApply: (accepted: string[]) => void; onAsk?: () => void }) {
  const [accepted, setAccepted] = useState<Set<string>>(() => new Set(plan.units.filter(moves).map((u) => u.key)));
  const toggle = (k: string) => {
    const next = new Set(accepted);
    if (next.has(k)) next.delete(k);
    else next.add(k);
    setAccepted(next);
  };
  const undecided = plan.units.filter((u) => u.undecided).length;
  return (
    <div data-testid="tidy-plan-view">
      <div class="small" data-testid="tidy-model-estimate">
        {plan.model_lines.length === 0 && "No unit is undecided: the rules decided every unit (no model needed)."}
        {plan.model_lines.map((l, i) => (
          <div key={i} data-testid="tidy-model-line">
            {l}
          </div>
        ))}
        {undecided > 0 && <div>{undecided} undecided unit(s) stay loaded unless a model decides them.</div>}
        {plan.model_enabled && plan.model_requests > 0 && onAsk && (
          <button data-testid="tidy-ask-model" onClick={onAsk}>
            Ask the model: {plan.model_requests} request(s), est. {formatUsd(plan.model_est_cost_usd)}
          </button>
        )}
        {!plan.model_enabled && undecided > 0 && (
          <div class="muted">Turn on memories.tidy_ask_model (Settings) to let a model decide them.</div>
        )}
      </div>
      {GROUPS.map((g) => {
        const units = plan.units.filter((u) => u.group === g.id);
        if (units.length === 0) return null;
        return (
          <details key={g.id} open={g.id !== "kept" && units.length <= OPEN_MAX} data-testid={`tidy-group-${g.id}`}>
            <summary>
              {g.title} ({units.length})
            </summary>
            <ul class="findings">
              {units.map((u) => (
                <li key={u.key} data-testid="tidy-unit">
                  {moves(u) && (
                    <input
                      type="checkbox"
                      aria-label={`accept ${u.key}`}
                      data-testid={`tidy-accept-${u.key}`}
                      checked={accepted.has(u.key)}
                      onChange={() => toggle(u.key)}
                    />
                  )}{" "}
                  <code>{u.key}</code> {u.text}
                  {u.undecided && (
                    <>
                      {" "}
                      <Badge kind="idle">undecided</Badge>
                    </>
                  )}
                  <div class="small muted">
                    {moves(u) ? `→ ${u.to}: ` : ""}
                    {u.reason}
                  </div>
                </li>
              ))}
            </ul>
          </details>
        );
      })}
      <button data-testid="tidy-apply" onClick={() => onApply([...accepted])}>
        Apply the {accepted.size} accepted unit(s) (backup first)
      </button>
      <details>
        <summary>Plan as text</summary>
        <pre class="content" data-testid="tidy-plan-text">
          {plan.text}
        </pre>
      </details>
    </div>
  );
}
