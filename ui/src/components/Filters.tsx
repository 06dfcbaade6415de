// The filter bar pieces the Runs and Usage pages share: a choice list with "any", a date
// range (UTC, or the days of a named time zone), and a CSV export button. One place, so
// both pages filter and export alike.
import { useEffect, useState } from "preact/hooks";
import { toFailure } from "../api";
import type { ApiFailure } from "../api";

/** The browser's IANA time zone (`America/Los_Angeles`), `UTC` when it has none. */
export function browserZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

/** How far `zone`'s wall clock is ahead of UTC at instant `t` (ms; Tokyo: +9 h). */
function zoneOffsetMs(zone: string, t: number): number {
  const f = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
  const p: Record<string, number> = {};
  for (const x of f.formatToParts(new Date(t))) if (x.type !== "literal") p[x.type] = Number(x.value);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(t / 1000) * 1000;
}

/** Milliseconds of a `YYYY-MM-DD` date at 00:00 in `zone` (default UTC), or of the next
 *  midnight with `endOfDay` (so a range "to" a day includes it, 23 or 25 hours on
 *  daylight-saving days); `null` for an empty or invalid date. */
export function dateToMs(s: string, endOfDay = false, zone = "UTC"): number | null {
  if (!s || Number.isNaN(Date.parse(`${s}T00:00:00Z`))) return null;
  const [y, m, d] = s.split("-").map(Number);
  const wall = Date.UTC(y, m - 1, d + (endOfDay ? 1 : 0));
  if (zone === "UTC") return wall;
  // The offset at the guess, then again at the corrected instant (a change between).
  const guess = wall - zoneOffsetMs(zone, wall);
  return wall - zoneOffsetMs(zone, guess);
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

/** "From" and "To" date inputs, days of `zone` (default UTC); `onChange` gets the range in
 *  ms (`until` exclusive), again when `zone` changes. */
export function DateRange(props: { onChange: (since_ms: number | null, until_ms: number | null) => void; sinceTestid?: string; zone?: string }) {
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const zone = props.zone ?? "UTC";
  const toMs = (s: string, end = false) => dateToMs(s, end, zone);
  useEffect(() => {
    if (since || until) props.onChange(toMs(since), toMs(until, true));
    // Only a change of zone re-reads the days; the inputs call onChange themselves.
  }, [zone]);
  return (
    <>
      <label>
        From ({zone})
        <input
          type="date"
          value={since}
          data-testid={props.sinceTestid}
          onChange={(e) => {
            const v = (e.target as HTMLInputElement).value;
            setSince(v);
            props.onChange(toMs(v), toMs(until, true));
          }}
        />
      </label>
      <label>
        To ({zone})
        <input
          type="date"
          value={until}
          onChange={(e) => {
            const v = (e.target as HTMLInputElement).value;
            setUntil(v);
            props.onChange(toMs(since), toMs(v, true));
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
