// Formatting of tokens, money, bytes, durations and times for display. Pure functions,
// unit-tested in format.test.ts.

const int = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** Whole number with thousands separators: 12345 → "12,345". */
export function formatInt(n: number): string {
  return int.format(Math.round(n));
}

/** Compact token count: 950 → "950", 12_345 → "12.3K", 1_234_567 → "1.23M". */
export function formatTokens(n: number): string {
  const a = Math.abs(n);
  if (a < 1000) return String(Math.round(n));
  if (a < 1_000_000) return `${trim((n / 1000).toFixed(a < 10_000 ? 2 : 1))}K`;
  if (a < 1_000_000_000) return `${trim((n / 1_000_000).toFixed(a < 10_000_000 ? 2 : 1))}M`;
  return `${trim((n / 1_000_000_000).toFixed(2))}B`;
}

function trim(s: string): string {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

/**
 * US dollars. `null` means the price is unknown and is never shown as $0.
 * Amounts under one cent keep 4 significant digits so small runs are not rounded to $0.00.
 */
export function formatUsd(x: number | null | undefined): string {
  if (x === null || x === undefined || Number.isNaN(x)) return "price unknown";
  if (x === 0) return "$0.00";
  const a = Math.abs(x);
  const sign = x < 0 ? "-" : "";
  if (a < 0.000001) return `${sign}<$0.000001`;
  if (a < 0.01) return `${sign}$${trim(a.toPrecision(2))}`;
  return `${sign}$${new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(a)}`;
}

/** USD per 1M tokens: 0.25 → "$0.25 / 1M", null → "price unknown". */
export function formatPerMtok(x: number | null | undefined): string {
  if (x === null || x === undefined) return "price unknown";
  return `$${trim(x.toFixed(4))} / 1M`;
}

/** Bytes in binary units: 512 → "512 B", 16384 → "16 KiB", 1_572_864 → "1.5 MiB". */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : trim(v.toFixed(1))} ${units[i]}`;
}

/** Milliseconds: 850 → "850 ms", 2500 → "2.5 s", 90_000 → "1 min 30 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${trim((ms / 1000).toFixed(1))} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  if (m < 60) return s ? `${m} min ${s} s` : `${m} min`;
  const h = Math.floor(m / 60);
  return `${h} h ${m % 60} min`;
}

/** Unix ms as local "YYYY-MM-DD HH:MM". */
export function formatTime(ms: number | null | undefined, tzOffsetMinutes?: number): string {
  if (ms === null || ms === undefined) return "—";
  const off = tzOffsetMinutes ?? new Date(ms).getTimezoneOffset();
  const d = new Date(ms - off * 60_000);
  return d.toISOString().slice(0, 16).replace("T", " ");
}

/** Share 0..1 as a percentage string: 0.4567 → "46%". */
export function formatPercent(x: number): string {
  return `${Math.round(x * 100)}%`;
}
