import { describe, expect, it } from "vitest";
import type { ConfigField } from "./api";
import { checkField, toDraft, toPatch } from "./validate";

const f = (o: Partial<ConfigField>): ConfigField => ({
  block: "output",
  key: "output.maxFileLines",
  kind: "integer",
  default: 1000,
  unit: "lines",
  min: 1,
  max: 100000,
  choices: [],
  nullable: false,
  help: "",
  restart: false,
  ...o,
});

describe("field checks", () => {
  it("checks integer ranges and syntax", () => {
    expect(checkField(f({}), "50")).toEqual({ ok: true, value: 50 });
    expect(checkField(f({}), "0")).toEqual({ ok: false, error: "must be between 1 and 100000" });
    expect(checkField(f({}), "1.5").ok).toBe(false);
    expect(checkField(f({}), "abc").ok).toBe(false);
    expect(checkField(f({}), "").ok).toBe(false);
  });
  it("treats empty nullable input as null", () => {
    const cap = f({ key: "memories.monthly_spend_cap_usd", kind: "number", min: 0, max: null, nullable: true });
    expect(checkField(cap, "")).toEqual({ ok: true, value: null });
    expect(checkField(cap, "12.5")).toEqual({ ok: true, value: 12.5 });
    expect(checkField(cap, "-1")).toEqual({ ok: false, error: "must be at least 0" });
  });
  it("checks lists against choices", () => {
    const src = f({ kind: "list", choices: ["codex", "claude"], min: null, max: null });
    expect(checkField(src, "codex, claude")).toEqual({ ok: true, value: ["codex", "claude"] });
    expect(checkField(src, "codex, vim").ok).toBe(false);
    expect(toDraft(src, ["codex", "claude"])).toBe("codex, claude");
  });
  it("builds nested patches", () => {
    expect(toPatch({ "output.maxFileLines": 5, "memories.sources": ["pi"] })).toEqual({
      output: { maxFileLines: 5 },
      memories: { sources: ["pi"] },
    });
  });
});
