import { useEffect, useRef, useState } from "preact/hooks";
import type uPlotType from "uplot";
import "uplot/dist/uPlot.min.css";

// uPlot is loaded on demand: it reads the browser's locale when it loads, and a broken
// locale (e.g. LANG=C in a bare session) must cost the chart, not the whole UI.
let loading: Promise<typeof uPlotType> | null = null;
const loadUPlot = () => (loading ??= import("uplot").then((m) => m.default));
import type { UsageTotals } from "../api";
import { formatUsd } from "../format";

/** Daily cost bars (uPlot). Days without requests are filled with 0 so gaps show. */
export function DailyCostChart({ daily }: { daily: UsageTotals[] }) {
  const el = useRef<HTMLDivElement>(null);
  const [uPlot, setUPlot] = useState<typeof uPlotType | null>(null);
  const [failed, setFailed] = useState("");
  useEffect(() => {
    loadUPlot().then((u) => setUPlot(() => u), (e) => setFailed(String(e)));
  }, []);
  useEffect(() => {
    if (!uPlot || !el.current || daily.length === 0) return;
    const DAY = 86_400;
    const first = daily[0].start_ms / 1000;
    const last = daily[daily.length - 1].start_ms / 1000;
    const byDay = new Map(daily.map((d) => [d.start_ms / 1000, d.cost_usd]));
    const xs: number[] = [];
    const ys: number[] = [];
    for (let t = first; t <= last; t += DAY) {
      xs.push(t);
      ys.push(byDay.get(t) ?? 0);
    }
    const width = el.current.clientWidth || 600;
    const plot = new uPlot(
      {
        width,
        height: 220,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        scales: { x: { time: true, range: (_u, min, max) => [min - DAY / 2, max + DAY / 2] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.15 : 1] } },
        axes: [{}, { values: (_u, vals) => vals.map((v) => formatUsd(v)), size: 70 }],
        series: [
          {},
          {
            label: "cost (USD, UTC day)",
            stroke: "#2563eb",
            fill: "rgba(37,99,235,0.35)",
            paths: uPlot.paths.bars!({ size: [0.7, 60] }),
            value: (_u, v) => (v === null ? "—" : formatUsd(v)),
          },
        ],
        legend: { show: true },
      },
      [xs, ys],
      el.current,
    );
    return () => plot.destroy();
  }, [daily, uPlot]);
  if (daily.length === 0) return <p class="muted">No costs in this range.</p>;
  if (failed) return <p class="error-text">The chart could not load: {failed}</p>;
  return <div ref={el} class="chart" data-testid="daily-chart" />;
}
