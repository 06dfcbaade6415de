import { describe, expect, it } from "vitest";
import { formatBytes, formatDuration, formatInt, formatPerMtok, formatTokens, formatUsd } from "./format";

describe("tokens", () => {
  it("keeps small counts exact and compacts large ones", () => {
    expect(formatTokens(0)).toBe("0");
    expect(formatTokens(950)).toBe("950");
    expect(formatTokens(1000)).toBe("1K");
    expect(formatTokens(1234)).toBe("1.23K");
    expect(formatTokens(12_345)).toBe("12.3K");
    expect(formatTokens(920_000)).toBe("920K");
    expect(formatTokens(1_234_567)).toBe("1.23M");
    expect(formatTokens(55_000_000)).toBe("55M");
    expect(formatTokens(2_500_000_000)).toBe("2.5B");
  });
  it("separates thousands in exact counts", () => {
    expect(formatInt(12345)).toBe("12,345");
    expect(formatInt(1_000_000)).toBe("1,000,000");
  });
});

describe("money", () => {
  it("never shows an unknown price as $0", () => {
    expect(formatUsd(null)).toBe("price unknown");
    expect(formatUsd(undefined)).toBe("price unknown");
    expect(formatPerMtok(null)).toBe("price unknown");
  });
  it("keeps sub-cent amounts visible", () => {
    expect(formatUsd(0)).toBe("$0.00");
    expect(formatUsd(0.00875)).toBe("$0.0088");
    expect(formatUsd(0.0004)).toBe("$0.0004");
    expect(formatUsd(0.0000001)).toBe("<$0.000001");
  });
  it("rounds cents and groups thousands", () => {
    expect(formatUsd(0.175)).toBe("$0.18");
    expect(formatUsd(1.5)).toBe("$1.50");
    expect(formatUsd(1234.567)).toBe("$1,234.57");
    expect(formatUsd(-2)).toBe("-$2.00");
  });
  it("prices per million tokens", () => {
    expect(formatPerMtok(0.25)).toBe("$0.25 / 1M");
    expect(formatPerMtok(15)).toBe("$15 / 1M");
    expect(formatPerMtok(0.0375)).toBe("$0.0375 / 1M");
  });
});

describe("bytes and durations", () => {
  it("uses binary units", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(16_384)).toBe("16 KiB");
    expect(formatBytes(131_072)).toBe("128 KiB");
    expect(formatBytes(1_572_864)).toBe("1.5 MiB");
  });
  it("reads durations", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(2500)).toBe("2.5 s");
    expect(formatDuration(90_000)).toBe("1 min 30 s");
    expect(formatDuration(3_600_000 * 2 + 60_000 * 5)).toBe("2 h 5 min");
  });
});
