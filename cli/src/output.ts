// --output: table (the columns that matter, fitted to 120 columns), wide (every field), json,
// yaml, name (kind/key), custom-columns=HEADER:.path,... and jsonpath=TEMPLATE; a table unless -o
// says otherwise, on a terminal and in a pipe alike (as kubectl's: `vnm bridge list | grep web`).
// Every string of a table, a name or a description goes through `clean`; JSON and YAML escape.
import Table from "cli-table3";
import { usage } from "./errors.ts";
import { parseTemplate, printTemplate } from "./jsonpath.ts";
import { toJson } from "./json.ts";
import type { Kind } from "./kinds.ts";
import { clean, escapeJson, say, toYaml } from "./text.ts";
import { isRecord, memberOf } from "@vnm/kit/values";

export interface Column {
  header: string;
  value: (item: Record<string, unknown>) => unknown;
}

export type Format =
  | { type: "table" | "wide" | "json" | "yaml" | "name" }
  | { type: "custom"; columns: Column[] }
  | { type: "jsonpath"; template: ReturnType<typeof parseTemplate> };

export { sortBy } from "./jsonpath.ts";

export const FORMATS = "table, wide, json, yaml, name or custom-columns=HEADER:.field,..., or jsonpath=TEMPLATE";

/** A field path as kubectl writes it: ".name", ".a.b", ".list[0]". */
function pathGetter(path: string): (item: Record<string, unknown>) => unknown {
  if (!/^\.?[\w$-]+(\.[\w$-]+|\[\d+\])*$/.test(path)) throw usage(`custom-columns: ${path} is not a field path such as .name or .a.b[0]`);
  const steps = [...path.replace(/^\./, "").matchAll(/[\w$-]+|\[(\d+)\]/g)].map((m) => (m[1] !== undefined ? Number(m[1]) : m[0]));
  return (item) => steps.reduce<unknown>((v, s) => (Array.isArray(v) ? (typeof s === "number" ? v[s] : undefined) : memberOf(v, String(s))), item);
}

const PLAIN_FORMATS = ["table", "wide", "json", "yaml", "name"] as const;

export function parseFormat(given: string | undefined): Format {
  if (given === undefined) return { type: "table" };
  // kubectl's -o=json: the short option's value with its "=".
  const text = given.replace(/^=/, "");
  const plain = PLAIN_FORMATS.find((f) => f === text);
  if (plain) return { type: plain };
  const jp = /^jsonpath=(.*)$/s.exec(text);
  if (jp) return { type: "jsonpath", template: parseTemplate(jp[1]!) };
  const custom = /^custom-columns=(.+)$/.exec(text);
  if (!custom) throw usage(`-o ${text}: the formats are ${FORMATS}`);
  const columns = custom[1]!.split(",").map((spec) => {
    const at = spec.indexOf(":");
    if (at <= 0) throw usage(`custom-columns: ${spec} is not HEADER:.field`);
    return { header: spec.slice(0, at), value: pathGetter(spec.slice(at + 1)) };
  });
  return { type: "custom", columns };
}

/** "adminStateUp" / "admin_state_up" -> "ADMIN_STATE_UP". */
const headerOf = (field: string) => field.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();

/** One cell: nothing for null, JSON for objects, and never a control character. */
export function cell(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (Array.isArray(v) && v.every((x) => typeof x !== "object")) return clean(v.join(","));
  return clean(typeof v === "object" ? toJson(v) : String(v));
}

/**
 * The columns of a table. A kind keyed by something else than its id (a subnet: 10.5.0.0_24)
 * gets a KEY column first, the key `get` and the parents' options take, unless a column already
 * shows it for every item (a DHCP host's MAC_ADDR).
 */
export function columnsOf(kind: Kind, format: Format, items?: Record<string, unknown>[]): Column[] {
  if (format.type === "custom") return format.columns;
  const columns: Column[] = kind.columns(format.type === "wide").map((f) => ({ header: headerOf(f), value: (i) => i[f] }));
  if (kind.key === "id") return columns;
  const shown = items?.length && columns.some((c) => items.every((i) => cell(c.value(i)) === cell(kind.keyOf(i))));
  return shown ? columns : [{ header: "KEY", value: (i) => kind.keyOf(i) }, ...columns];
}

const width = (s: string) => [...s].length;
const GAP = 3;

/** Column widths: each its widest cell, the widest shrunk first until the table fits `limit`. */
export function fit(rows: string[][], limit: number | undefined): number[] {
  const widths = rows[0]!.map((_, j) => Math.max(...rows.map((r) => width(r[j]!))));
  if (limit === undefined) return widths;
  const floor = rows[0]!.map((h) => Math.max(width(h), 8));
  const total = () => widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1);
  while (total() > limit) {
    let j = -1;
    for (let k = 0; k < widths.length; k++) if (widths[k]! > floor[k]! && (j < 0 || widths[k]! > widths[j]!)) j = k;
    if (j < 0) break;
    widths[j]!--;
  }
  return widths;
}

/** The rows as aligned lines (cli-table3 without borders), cells cut with "…" beyond their width. */
export function lines(rows: string[][], widths: number[]): string[] {
  const t = new Table({
    chars: { top: "", "top-mid": "", "top-left": "", "top-right": "", bottom: "", "bottom-mid": "", "bottom-left": "", "bottom-right": "", left: "", "left-mid": "", mid: "", "mid-mid": "", right: "", "right-mid": "", middle: " ".repeat(GAP) },
    style: { "padding-left": 0, "padding-right": 0, head: [], border: [], compact: true },
    colWidths: widths,
    wordWrap: false,
  });
  t.push(...rows);
  return t.toString().split("\n").map((l) => l.trimEnd());
}

export const TABLE_WIDTH = 120;

function table(kind: Kind, items: Record<string, unknown>[], format: Format): string {
  const columns = columnsOf(kind, format, items);
  const rows = [columns.map((c) => clean(c.header)), ...items.map((i) => columns.map((c) => cell(c.value(i))))];
  // Nothing at all on stdout, as kubectl: a script counting lines counts none.
  if (items.length === 0) {
    say("No items.\n");
    return "";
  }
  return lines(rows, fit(rows, format.type === "wide" ? undefined : TABLE_WIDTH)).join("\n");
}

/** JSON for a terminal or a pipe: valid, with every control character escaped. */
export const json = (value: unknown) => escapeJson(toJson(value, 2));

export function render(kind: Kind, value: unknown, format: Format): string {
  if (format.type === "json") return json(value);
  if (format.type === "yaml") return toYaml(value);
  if (format.type === "jsonpath") return printTemplate(format.template, value);
  // Rows are objects: anything else in a list is no item of the kind.
  const items = (Array.isArray(value) ? value : [value]).filter(isRecord);
  if (format.type === "name") return items.map((i) => `${kind.command}/${clean(kind.keyOf(i))}`).join("\n");
  return table(kind, items, format);
}

/** `describe`: one field per line, nested values indented, then the links. */
export function describeLines(kind: Kind, item: Record<string, unknown>): string[] {
  const linkFields = new Set(kind.fields.filter((f) => f.link).map((f) => f.name));
  const fields = Object.keys(item).filter((k) => !linkFields.has(k));
  const label = Math.max(...fields.map((f) => f.length)) + 2;
  const out = [`${"Kind:".padEnd(label)}${kind.command}`];
  if (kind.key !== "id") out.push(`${"Key:".padEnd(label)}${cell(kind.keyOf(item))}`);
  const nested = (v: unknown, indent: string): string[] => {
    if (Array.isArray(v)) return v.flatMap((x) => (x !== null && typeof x === "object" ? [`${indent}-`, ...nested(x, `${indent}  `)] : [`${indent}- ${cell(x)}`]));
    return Object.entries(isRecord(v) ? v : {}).flatMap(([k, x]) =>
      x !== null && typeof x === "object" ? [`${indent}${clean(k)}:`, ...nested(x, `${indent}  `)] : [`${indent}${clean(k)}: ${cell(x)}`],
    );
  };
  for (const f of fields) {
    const v = item[f];
    const simple = v === null || typeof v !== "object" || (Array.isArray(v) && v.every((x) => x === null || typeof x !== "object"));
    if (simple) out.push(`${`${clean(f)}:`.padEnd(label)}${Array.isArray(v) ? (v.length ? cell(v.join(", ")) : "(none)") : cell(v) || "(none)"}`);
    else out.push(`${clean(f)}:`, ...nested(v, "  "));
  }
  const links = Object.entries(item).filter(([k, v]) => linkFields.has(k) && typeof v === "string");
  if (links.length) {
    const w = Math.max(...links.map(([k]) => k.length)) + 2;
    out.push("Links:", ...links.map(([k, v]) => `  ${`${clean(k)}:`.padEnd(w)}${cell(v)}`));
  }
  return out;
}
