// The filter bar pieces the Runs and Usage pages share: a choice list with "any", a UTC
// date range, and a CSV export button. One place, so both pages filter and export alike.
import { useState } from "preact/hooks";
import { toFailure } from "../api";
import type { ApiFailure } from "../api";

/** Milliseconds of a `YYYY-MM-DD` date at 00:00 UTC (or the next midnight with `endOfDay`,
 *  so a range "to" a day includes it); `null` for an empty or invalid date. */
export function dateToMs(s: string, endOfDay = false): number | null {
  if (!s) return null;
  const t = Date.parse(`${s}T00:00:00Z`);
  return Number.isNaN(t) ? null : t + (endOfDay ? 86_400_000 : 0);
}

/** A `<select>` of `options` with an "any" entry; `onChange` gets "" for any. */
export function ChoiceFilter(props: {
  label: string;
  value: string | null | undefined;
  options: string[] | undefined;
  onChange: (v: string) => void;
  testid: string;
}) {
  return (
    <label>
      {props.label}
      <select value={props.value ?? ""} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)} data-testid={props.testid}>
        <option value="">any</option>
        {props.options?.map((p) => <option key={p} value={p}>{p}</option>)}
      </select>
    </label>
  );
}

/** "From" and "To" UTC date inputs; `onChange` gets the range in ms (`until` exclusive). */
export function DateRange(props: { onChange: (since_ms: number | null, until_ms: number | null) => void; sinceTestid?: string }) {
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  return (
    <>
      <label>
        From (UTC)
        <input
          type="date"
          value={since}
          data-testid={props.sinceTestid}
          onChange={(e) => {
            const v = (e.target as HTMLInputElement).value;
            setSince(v);
            props.onChange(dateToMs(v), dateToMs(until, true));
          }}
        />
      </label>
      <label>
        To (UTC)
        <input
          type="date"
          value={until}
          onChange={(e) => {
            const v = (e.target as HTMLInputElement).value;
            setUntil(v);
            props.onChange(dateToMs(since), dateToMs(v, true));
          }}
        />
      </label>
    </>
  );
}

/** "Export CSV": fetches the text and saves it as `filename`; a failure goes to `onError`. */
export function CsvButton(props: { fetch: () => Promise<string>; filename: string; testid: string; onError: (e: ApiFailure | null) => void }) {
  const run = async () => {
    try {
      const text = await props.fetch();
      const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = props.filename;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
      props.onError(null);
    } catch (e) {
      props.onError(toFailure(e));
    }
  };
  return (
    <button onClick={() => void run()} data-testid={props.testid}>
      Export CSV
    </button>
  );
}
