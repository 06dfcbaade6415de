import { useState } from "preact/hooks";
import type { TidyPlanView, TidyUnitView } from "../api";
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

/** Units that would leave the loaded file: what the user accepts or not. */
function moves(u: TidyUnitView): boolean {
  return u.group !== "kept";
}

/**
 * A tidy plan unit by unit, grouped kept / on demand / daily / archive / merged, with the
 * model's estimated cost for the undecided units and a checkbox per unit that would move
 * (all accepted at first); `onApply` gets the accepted units' keys.
 */
export function TidyPlan({ plan, onApply }: { plan: TidyPlanView; onApply: (accepted: string[]) => void }) {
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
      <p class="small" data-testid="tidy-model-estimate">
        {plan.model_estimate ?? "No unit is undecided: the rules decided every unit (no model needed)."}
        {undecided > 0 && ` ${undecided} undecided unit(s) stay loaded unless a model decides them.`}
      </p>
      {GROUPS.map((g) => {
        const units = plan.units.filter((u) => u.group === g.id);
        if (units.length === 0) return null;
        return (
          <details key={g.id} open={g.id !== "kept"} data-testid={`tidy-group-${g.id}`}>
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
