// kubectl's JSONPath templates for -o jsonpath= and --sort-by: text with {expressions}, each a
// JSONPath (.a.b, .items[*].name, ..name, [0], [?(@.x=="y")]) evaluated by jsonpath-plus (its safe
// evaluator: no JavaScript is run), {range EXPR}...{end}, and {"literal"} ("\n", "\t"). A list is
// {"items": [...]} as kubectl's, so {.items[*].name} works. Bounded: a template of at most 1,024
// characters and ranges nested at most 8 deep. Strings print as a table cell does (control
// characters removed: a name is the tenant's); objects as escaped JSON; several results joined by
// a space.
import { JSONPath } from "jsonpath-plus";
import { usage } from "./errors.ts";
import { toJson } from "./json.ts";
import { clean, escapeJson } from "./text.ts";

type Node = { type: "text"; text: string } | { type: "path"; path: string } | { type: "range"; path: string; body: Node[] };

const MAX_LENGTH = 1024;
const MAX_DEPTH = 8;

/** A kubectl path as JSONPath: ".a" and "a" are "$.a", "@" and "$" stay the root. */
function jsonPathOf(expr: string): string {
  const e = expr.trim();
  if (e === "" || e === "." || e === "$" || e === "@") return "$";
  if (e.startsWith("$")) return e;
  if (e.startsWith("@")) return `$${e.slice(1)}`;
  if (e.startsWith(".") || e.startsWith("[")) return `$${e}`;
  return `$.${e}`;
}

/** A quoted literal's text ("\n" a line break, as in JSON; single quotes too). */
function literal(text: string, template: string): string {
  const body = text.slice(1, -1);
  try {
    return JSON.parse(`"${(text[0] === "'" ? body.replaceAll('"', '\\"') : body).replaceAll("\n", "\\n")}"`) as string;
  } catch {
    throw usage(`jsonpath ${clean(template)}: ${clean(text)} is not a string`);
  }
}

/** Parses a template; a usage error (exit 2) when it is not one. */
export function parseTemplate(template: string): Node[] {
  if (template.length > MAX_LENGTH) throw usage(`jsonpath: a template has at most ${MAX_LENGTH} characters`);
  const root: Node[] = [];
  const stack: Node[][] = [root];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf("{", i);
    if (open < 0) {
      stack.at(-1)!.push({ type: "text", text: template.slice(i) });
      break;
    }
    if (open > i) stack.at(-1)!.push({ type: "text", text: template.slice(i, open) });
    // The action's end: the first "}" outside quotes.
    let j = open + 1;
    let quote: string | undefined;
    for (; j < template.length; j++) {
      const c = template[j]!;
      if (quote) {
        if (c === "\\") j++;
        else if (c === quote) quote = undefined;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === "}") break;
    }
    if (j >= template.length) throw usage(`jsonpath ${clean(template)}: unclosed {`);
    const action = template.slice(open + 1, j).trim();
    i = j + 1;
    if (action === "end") {
      if (stack.length === 1) throw usage(`jsonpath ${clean(template)}: {end} without {range}`);
      stack.pop();
    } else if (/^range\s/.test(action)) {
      if (stack.length > MAX_DEPTH) throw usage(`jsonpath: ranges nest at most ${MAX_DEPTH} deep`);
      const node: Node = { type: "range", path: jsonPathOf(action.slice(6)), body: [] };
      stack.at(-1)!.push(node);
      stack.push(node.body);
    } else if (/^["']/.test(action)) {
      stack.at(-1)!.push({ type: "text", text: literal(action, template) });
    } else {
      stack.at(-1)!.push({ type: "path", path: jsonPathOf(action) });
    }
  }
  if (stack.length > 1) throw usage(`jsonpath ${clean(template)}: {range} without {end}`);
  return root;
}

/** The values a JSONPath finds in a value (none when it names nothing). */
export function query(path: string, value: unknown): unknown[] {
  try {
    return JSONPath({ path, json: value as object, wrap: true, eval: "safe" }) ?? [];
  } catch (err) {
    throw usage(`jsonpath ${clean(path)}: ${clean(err instanceof Error ? err.message : String(err))}`);
  }
}

const shown = (v: unknown) => (typeof v === "string" ? clean(v) : v !== null && typeof v === "object" ? escapeJson(toJson(v)) : String(v));

function run(nodes: Node[], value: unknown): string {
  let out = "";
  for (const n of nodes) {
    if (n.type === "text") out += n.text;
    else if (n.type === "path") out += query(n.path, value).map(shown).join(" ");
    else {
      const found = query(n.path, value);
      const each = found.length === 1 && Array.isArray(found[0]) ? found[0] : found;
      for (const v of each) out += run(n.body, v);
    }
  }
  return out;
}

/** The template's text for a value (an item, or {"items": [...]} for a list). */
export function printTemplate(nodes: Node[], value: unknown): string {
  return run(nodes, Array.isArray(value) ? { kind: "List", items: value } : value);
}

/** --sort-by: ".name" or "{.name}", the first value each item has; items without one last. */
export function sortBy(expr: string): (items: unknown[]) => unknown[] {
  const inner = /^\{(.*)\}$/s.exec(expr.trim())?.[1] ?? expr;
  const nodes = parseTemplate(`{${inner}}`);
  const only = nodes[0];
  if (nodes.length !== 1 || only?.type !== "path") throw usage(`--sort-by ${clean(expr)}: one field path, such as .name or {.tenantId}`);
  const path = only.path;
  const keyOf = (item: unknown) => query(path, item)[0];
  const rank = (v: unknown) => (v === undefined || v === null ? 3 : typeof v === "number" || typeof v === "bigint" ? 0 : typeof v === "string" ? 1 : 2);
  const compare = (a: unknown, b: unknown): number => {
    const [ra, rb] = [rank(a), rank(b)];
    if (ra !== rb) return ra - rb;
    if ((typeof a === "number" || typeof a === "bigint") && (typeof b === "number" || typeof b === "bigint")) return a < b ? -1 : a > b ? 1 : 0;
    if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
    if (ra === 2) return toJson(a) < toJson(b) ? -1 : toJson(a) > toJson(b) ? 1 : 0;
    return 0;
  };
  return (items) =>
    items
      .map((item, i) => ({ item, key: keyOf(item), i }))
      .sort((x, y) => compare(x.key, y.key) || x.i - y.i)
      .map((x) => x.item);
}
