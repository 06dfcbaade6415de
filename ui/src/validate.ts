// Client-side check of one Settings field against its schema (kind, range, choices), so
// errors show while typing. The server repeats every check (and the cross-field ones)
// before saving; this only gives earlier feedback.

import type { ConfigField } from "./api/types";

/** What an input holds: text for numbers/text/lists, boolean for switches. */
export type Draft = string | boolean;

/** The parsed value (JSON) or the error to show under the field. */
export type Checked = { ok: true; value: unknown } | { ok: false; error: string };

/** The draft shown for a stored value. */
export function toDraft(field: ConfigField, value: unknown): Draft {
  if (field.kind === "boolean") return Boolean(value);
  if (value === null || value === undefined) return "";
  if (field.kind === "list") return (value as string[]).join(", ");
  return String(value);
}

function range(field: ConfigField, n: number): string | null {
  if (field.min !== null && n < field.min) {
    return field.max !== null ? `must be between ${field.min} and ${field.max}` : `must be at least ${field.min}`;
  }
  if (field.max !== null && n > field.max) return `must be between ${field.min ?? "-∞"} and ${field.max}`;
  return null;
}

/** Check a draft: parse it by the field's kind and test range/choices. */
export function checkField(field: ConfigField, draft: Draft): Checked {
  if (field.kind === "boolean") return { ok: true, value: Boolean(draft) };
  const text = String(draft).trim();
  if (text === "") {
    if (field.nullable) return { ok: true, value: null };
    if (field.kind === "list") return { ok: true, value: [] };
    return { ok: false, error: "a value is required" };
  }
  switch (field.kind) {
    case "integer": {
      if (!/^\d+$/.test(text)) return { ok: false, error: "must be a whole number" };
      const n = Number(text);
      const e = range(field, n);
      return e ? { ok: false, error: e } : { ok: true, value: n };
    }
    case "number": {
      const n = Number(text);
      if (!Number.isFinite(n)) return { ok: false, error: "must be a number" };
      const e = range(field, n);
      return e ? { ok: false, error: e } : { ok: true, value: n };
    }
    case "choice":
      return field.choices.includes(text)
        ? { ok: true, value: text }
        : { ok: false, error: `must be one of ${field.choices.join(", ")}` };
    case "list": {
      const items = text.split(/[,\n]/).map((s) => s.trim()).filter(Boolean);
      const bad = field.choices.length ? items.find((i) => !field.choices.includes(i)) : undefined;
      return bad !== undefined
        ? { ok: false, error: `"${bad}" is not one of ${field.choices.join(", ")}` }
        : { ok: true, value: items };
    }
    default:
      return { ok: true, value: text };
  }
}

/** Get a nested value by dotted key. */
export function getPath(obj: unknown, key: string): unknown {
  return key.split(".").reduce<unknown>((o, k) => (o && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined), obj);
}

/** Build the nested change object from `{ "output.maxFileLines": 50 }`. */
export function toPatch(values: Record<string, unknown>): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [key, v] of Object.entries(values)) {
    const [block, ...rest] = key.split(".");
    (out[block] ??= {})[rest.join(".")] = v;
  }
  return out;
}

/** Deep equality for JSON values. */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
