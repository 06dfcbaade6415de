import { describe, expect, it } from "vitest";
import { dateToMs } from "./components/Filters";
import { costCell, TOKEN_COLUMNS } from "./pages/Usage";
import type { AgentTotals } from "./api";

const totals = (over: Partial<AgentTotals>): AgentTotals => ({
  requests: 0,
  input_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  cache_write_1h_tokens: 0,
  output_tokens: 0,
  reasoning_tokens: 0,
  total_tokens: 0,
  cost_usd: null,
  unpriced_requests: 0,
  provider_cost_usd: null,
  cache_hit_rate: 0,
  ...over,
});

describe("Usage page", () => {
  it("shows $0.00 for no requests and price unknown only for unpriced ones", () => {
    expect(costCell(totals({}))).toBe("$0.00");
    expect(costCell(totals({ requests: 2, unpriced_requests: 2 }))).toBe("price unknown");
    expect(costCell(totals({ requests: 3, cost_usd: 1.5, unpriced_requests: 1 }))).toBe("$1.50 + 1 unpriced");
  });

  it("labels the token columns as the CLI does, one meaning for every agent", () => {
    expect(TOKEN_COLUMNS.map(([label, key]) => `${label}:${key}`)).toEqual([
      "Input:input_tokens",
      "Cache read:cache_read_tokens",
      "Cache write:cache_write_tokens",
      "Output:output_tokens",
      "Reasoning:reasoning_tokens",
      "Total:total_tokens",
    ]);
  });

  it("reads the date range as days of the chosen time zone", () => {
    expect(dateToMs("2026-11-29")).toBe(Date.parse("2026-11-29T00:00:00Z"));
    expect(dateToMs("2026-11-29", true)).toBe(Date.parse("2026-11-30T00:00:00Z"));
    expect(dateToMs("2026-11-29", false, "Asia/Tokyo")).toBe(Date.parse("2026-11-28T15:00:00Z"));
    expect(dateToMs("2026-11-29", false, "America/Los_Angeles")).toBe(Date.parse("2026-11-29T08:00:00Z"));
    // The day daylight saving ends in Los Angeles is 25 hours long.
    const start = dateToMs("2026-11-01", false, "America/Los_Angeles")!;
    expect(start).toBe(Date.parse("2026-11-01T07:00:00Z"));
    expect(dateToMs("2026-11-01", true, "America/Los_Angeles")! - start).toBe(25 * 3_600_000);
    expect(dateToMs("")).toBeNull();
    expect(dateToMs("2026-13-45")).toBeNull();
  });
});
