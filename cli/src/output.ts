// --output table|json|yaml: a table on a terminal, JSON when piped.
import { stringify } from "yaml";

export type Format = "table" | "json" | "yaml";

export function defaultFormat(): Format {
  return process.stdout.isTTY ? "table" : "json";
}

const cell = (v: unknown): string => (v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));

/** The columns of a table: every field of the items but links (URLs). */
function columns(items: Record<string, unknown>[]): string[] {
  const keys = new Set<string>();
  for (const i of items) for (const [k, v] of Object.entries(i)) if (!(typeof v === "string" && /^https?:\/\//.test(v))) keys.add(k);
  return [...keys];
}

function table(items: Record<string, unknown>[]): string {
  if (items.length === 0) return "(none)";
  const cols = columns(items);
  const rows = [cols, ...items.map((i) => cols.map((c) => cell(i[c])))];
  const widths = cols.map((_, j) => Math.max(...rows.map((r) => r[j]!.length)));
  return rows.map((r) => r.map((c, j) => c.padEnd(widths[j]!)).join("  ").trimEnd()).join("\n");
}

/** JSON with integers beyond 2^53 kept exact (as BigInt), as the API writes them. */
export function parseExact(text: string): unknown {
  return JSON.parse(text, (_k, v, ctx?: { source?: string }) =>
    typeof v === "number" && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source) ? BigInt(ctx.source) : v,
  );
}

const raw = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

export function render(value: unknown, format: Format): string {
  if (format === "json") return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? raw(v.toString()) : v), 2);
  if (format === "yaml") return stringify(value).trimEnd();
  const items = Array.isArray(value) ? value : [value];
  return table(items as Record<string, unknown>[]);
}
