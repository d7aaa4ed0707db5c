// One command per kind of the catalog (the proto files the gateway serves from), children
// included: `vnm <kind> list|get|create|update|delete`, with flags from the proto fields
// (types, required, POST-only), the parents' path variables as options, and the item's key as
// the argument. Nothing here names a kind: a new proto is a new command.
import { type FieldInfo, type KindInfo, type Route, writableFields } from "@vnm/kit";
import { type Command, Option } from "commander";
import { CliError, request } from "./client.ts";
import { gatewayUrl } from "./config.ts";
import { type Format, defaultFormat, parseExact, render } from "./output.ts";

/** "DhcpV6Subnet" -> "dhcp-v6-subnet". */
export const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, "$1-$2").replace(/_/g, "-").toLowerCase();

/** A path variable's option: "bridgeId" -> --bridge, "subnetAddr" -> --subnet, "vlanId" -> --vlan. */
export const optionOf = (variable: string) => kebab(variable.replace(/(Id|Addr)$/, "") || variable);

/** The command name of a kind: its message name, kebab-case ("compat.CompatPool" -> compat-pool). */
export const commandOf = (k: KindInfo) => kebab(k.message.name);

const variables = (template: string) => [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

/** A flag's text as the field's JSON value. */
function fieldValue(f: FieldInfo, text: string): unknown {
  if (f.jsonObject || f.jsonValue || f.type === "message") {
    try {
      return JSON.parse(text);
    } catch {
      throw new CliError(`--${kebab(f.name)} must be JSON: ${text}`, 2);
    }
  }
  if (f.repeated) return text === "" ? [] : text.split(",").map((t) => fieldValue({ ...f, repeated: false }, t));
  if (f.type === "bool") return text === "true" ? true : text === "false" ? false : text;
  if (/int|fixed/.test(f.type) && /^-?\d+$/.test(text)) return f.type.includes("64") ? text : Number(text);
  return text;
}

/** The path of a route with its variables from the options (and the key argument). */
function pathOf(route: Route | undefined, values: Record<string, string | undefined>, what: string): string {
  if (!route) throw new CliError(`this kind has no ${what}`, 2);
  return route.template.replace(/\{(\w+)\}/g, (_m, v: string) => {
    const value = values[v];
    if (value === undefined) throw new CliError(`--${optionOf(v)} is required`, 2);
    return encodeURIComponent(value);
  });
}

interface Ctx {
  kind: KindInfo;
  routes: Route[];
}

const routeOf = ({ kind, routes }: Ctx, rpc: string | undefined) => routes.find((r) => r.service === kind.service && r.rpc === rpc);

async function print(res: Response, format: Format): Promise<void> {
  const text = await res.text();
  if (text) process.stdout.write(`${render(parseExact(text), format)}\n`);
}

/** The body from the field flags (and --data, a whole JSON object the flags override). */
function bodyOf(fields: FieldInfo[], opts: Record<string, unknown>): Record<string, unknown> {
  let body: Record<string, unknown> = {};
  if (typeof opts["data"] === "string") body = parseExact(opts["data"]) as Record<string, unknown>;
  for (const f of fields) {
    const v = opts[camel(kebab(f.name))];
    if (typeof v === "string") body[f.name] = fieldValue(f, v);
  }
  return body;
}

const camel = (s: string) => s.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

const writable = (k: KindInfo, mode: "create" | "update"): FieldInfo[] => writableFields(k.message, mode);

function addFieldFlags(cmd: Command, fields: FieldInfo[], mode: "create" | "update"): Command {
  for (const f of fields) {
    const kind = f.jsonObject || f.jsonValue || f.type === "message" ? "json" : f.repeated ? "a,b,..." : f.type;
    const o = new Option(`--${kebab(f.name)} <${kind}>`, `${f.name}${f.behaviors.has("REQUIRED") ? " (required)" : ""}${f.behaviors.has("IMMUTABLE") ? " (create only)" : ""}`);
    if (mode === "create" && f.behaviors.has("REQUIRED") && f.name !== "tenant_id") o.makeOptionMandatory();
    cmd.addOption(o);
  }
  return cmd.option("--data <json>", "the whole body as JSON (flags override its fields)");
}

/** The options of a route's path variables but the item's key. */
function addPathOptions(cmd: Command, templates: string[], key?: string): Command {
  const seen = new Set<string>();
  for (const t of templates) for (const v of variables(t)) if (v !== key && !seen.has(v)) seen.add(v) && cmd.option(`--${optionOf(v)} <${kebab(v)}>`, `path: ${v}`);
  return cmd;
}

/** The path values a command got: each variable from its option, the key from the argument. */
function pathValues(templates: string[], opts: Record<string, unknown>, key?: string, arg?: string): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const t of templates) for (const v of variables(t)) out[v] = v === key ? arg : (opts[camel(optionOf(v))] as string | undefined);
  return out;
}

export function addKindCommand(program: Command, kind: KindInfo, routes: Route[]): void {
  const ctx: Ctx = { kind, routes };
  const item = kind.itemTemplate;
  const key = variables(item).at(-1)!;
  const cmd = program.command(commandOf(kind)).description(`${kind.resource.displayName} (${kind.resource.mediaType})`);
  const fmt = (o: Record<string, unknown>) => (o["output"] as Format | undefined) ?? defaultFormat();
  const withOutput = (c: Command) => c.addOption(new Option("-o, --output <format>", "table, json or yaml").choices(["table", "json", "yaml"]));
  const list = routeOf(ctx, kind.rpcs.list);
  if (list) {
    const c = withOutput(addPathOptions(cmd.command("list").description(`list ${kind.resource.displayName} items`), [list.template]));
    if (list.queryFields.has("tenant_id")) c.option("--tenant <tenant>", "only this tenant's");
    if (list.queryFields.has("limit")) c.option("--limit <n>", "at most n items");
    c.action(async (o: Record<string, unknown>) => {
      const q = new URLSearchParams();
      if (o["tenant"]) q.set("tenant_id", String(o["tenant"]));
      if (o["limit"]) q.set("limit", String(o["limit"]));
      const path = pathOf(list, pathValues([list.template], o), "list") + (q.size ? `?${q}` : "");
      await print(await request(gatewayUrl(program.opts()["url"]), "GET", path), fmt(o));
    });
  }
  for (const [verb, rpc, method] of [["get", kind.rpcs.get, "GET"], ["delete", kind.rpcs.delete, "DELETE"]] as const) {
    const route = routeOf(ctx, rpc);
    if (!route) continue;
    const c = withOutput(addPathOptions(cmd.command(`${verb} <${kebab(key)}>`), [route.template], key));
    c.action(async (arg: string, o: Record<string, unknown>) => {
      await print(await request(gatewayUrl(program.opts()["url"]), method, pathOf(route, pathValues([route.template], o, key, arg), verb)), fmt(o));
    });
  }
  addWrites(program, cmd, ctx, key, fmt, withOutput);
}

function addWrites(program: Command, cmd: Command, ctx: Ctx, key: string, fmt: (o: Record<string, unknown>) => Format, withOutput: (c: Command) => Command): void {
  const create = routeOf(ctx, ctx.kind.rpcs.create);
  if (create) {
    const fields = writable(ctx.kind, "create");
    const c = withOutput(addFieldFlags(addPathOptions(cmd.command("create"), [create.template]), fields, "create"));
    c.action(async (o: Record<string, unknown>) => {
      const path = pathOf(create, pathValues([create.template], o), "create");
      await print(await request(gatewayUrl(program.opts()["url"]), "POST", path, bodyOf(fields, o)), fmt(o));
    });
  }
  const update = routeOf(ctx, ctx.kind.rpcs.update);
  if (update) {
    const fields = writable(ctx.kind, "update");
    const c = withOutput(addFieldFlags(addPathOptions(cmd.command(`update <${kebab(key)}>`), [update.template], key), fields, "update"));
    // A PUT replaces: the item as it is now, with what the flags change.
    c.action(async (arg: string, o: Record<string, unknown>) => {
      const base = gatewayUrl(program.opts()["url"]);
      const path = pathOf(update, pathValues([update.template], o, key, arg), "update");
      const now = parseExact(await (await request(base, "GET", path)).text()) as Record<string, unknown>;
      const kept = Object.fromEntries(fields.filter((f) => now[f.name] !== undefined && now[f.name] !== null).map((f) => [f.name, now[f.name]]));
      const body = JSON.stringify({ ...kept, ...bodyOf(fields, o) }, (_k, v) => (typeof v === "bigint" ? (JSON as unknown as { rawJSON(t: string): unknown }).rawJSON(v.toString()) : v));
      await print(await request(base, "PUT", path, body), fmt(o));
    });
  }
}
