// An item named on the command line by its key (id, MAC, subnet) or by its unique name: the key
// is tried first; when nothing has it, the kind's list is searched by name (within --tenant).
// Several items of that name are an error listing their keys. The same for the parents of a path
// (--bridge web) and for a field naming another item (--inbound-filter-id web-in: its id).
import { type Api, itemsOf, objectOf } from "./client.ts";
import { CliError } from "./errors.ts";
import { toJson } from "./json.ts";
import { type Kind, kindNamedBy, type PathValues, variables } from "./kinds.ts";
import { clean } from "./text.ts";

export interface Found {
  item: Record<string, unknown>;
  path: string;
  etag: string | null;
}

async function fetchItem(api: Api, path: string): Promise<Found> {
  const a = await api.call("GET", path);
  return { item: objectOf(a), path, etag: a.headers.get("etag") };
}

/**
 * The items of a kind (under the parents given), within a tenant if named; with `where`, only
 * those whose fields equal it (the gateway's list filters, ?name=web, narrow what it sends; the
 * equality is checked here all the same).
 */
export async function listItems(api: Api, kind: Kind, values: PathValues, tenant?: string, where: Record<string, unknown> = {}): Promise<Record<string, unknown>[]> {
  const q = new URLSearchParams();
  if (tenant && kind.list?.queryFields.has("tenant_id")) q.set("tenant_id", tenant);
  for (const [k, v] of Object.entries(where)) {
    const f = kind.info.message.byName.get(k);
    if (f && !f.repeated && f.type !== "message" && !f.link && !f.internal && !f.jsonObject && !f.jsonValue && !f.behaviors.has("INPUT_ONLY") && (typeof v === "string" || typeof v === "number" || typeof v === "boolean")) q.set(k, String(v));
  }
  const path = kind.path(kind.list, values, "list") + (q.size ? `?${q}` : "");
  const items = itemsOf(await api.call("GET", path)).filter((i) => Object.entries(where).every(([k, v]) => toJson(i[k]) === toJson(v)));
  const field = kind.info.resource.tenantField;
  return tenant && field ? items.filter((i) => i[field] === tenant) : items;
}

/**
 * The key an argument gives: itself, but for a kind keyed by something else than an id, a "/"
 * written as the API's "_" (a path segment holds no "/": subnet 10.5.0.0/24 is 10.5.0.0_24).
 */
export const keyForm = (kind: Kind, arg: string) => (kind.key !== "id" ? arg.replaceAll("/", "_") : arg);

/**
 * The item an argument names, by key or else by its unique name (within the tenant, if given).
 * `field`, when a field's value names it (--inbound-filter-id, inboundFilterId:), starts the
 * messages.
 */
export async function findItem(api: Api, kind: Kind, arg: string, values: PathValues, tenant?: string, field?: string): Promise<Found> {
  let missing: CliError;
  try {
    return await fetchItem(api, kind.path(kind.get, { ...values, [kind.key]: keyForm(kind, arg) }, "get"));
  } catch (err) {
    // 404: no such key; 400: not even the shape of one (a name is not a UUID).
    if (!(err instanceof CliError) || (err.status !== 404 && err.status !== 400) || !kind.has("name") || !kind.list) throw err;
    missing = err;
  }
  const named = await listItems(api, kind, values, tenant, { name: arg });
  const at = field ? `${field}: ` : "";
  if (named.length === 0) throw new CliError(`error 404: ${at}no ${kind.command} has the ${kind.key === "id" ? "id" : "key"} or name ${JSON.stringify(clean(arg))}`, 1, missing.status);
  if (named.length > 1) {
    const tenantField = kind.info.resource.tenantField;
    const lines = named.map((i) => `  ${clean(kind.keyOf(i))}${tenantField ? `  (tenant ${clean(String(i[tenantField] ?? "none"))})` : ""}`);
    // A field's value is looked up within the tenant of the item it is written to: only an id narrows it further.
    const narrow = tenantField && !field ? " or narrow with --tenant" : "";
    throw new CliError([`error: ${at}${named.length} ${kind.command} items are named ${JSON.stringify(clean(arg))}; name one by id${narrow}:`, ...lines].join("\n"), 1);
  }
  return fetchItem(api, kind.path(kind.get, kind.valuesOf(named[0]!), "get"));
}

/** The kind whose item a template's variable closes (bridgeId in /bridges/{bridgeId}/dhcp: a bridge), with its own variables' names in the template. */
export function parentKind(template: string, variable: string): { kind: Kind; names: Record<string, string> } | undefined {
  const at = template.indexOf(`{${variable}}`);
  if (at < 0) return undefined;
  const k = kindNamedBy(template.slice(0, at + variable.length + 2), variable);
  if (!k?.get || k.info.itemTemplate.replace(/\{\w+\}/g, "{}") !== template.slice(0, at + variable.length + 2).replace(/\{\w+\}/g, "{}")) return undefined;
  const mine = variables(k.info.itemTemplate);
  const theirs = variables(template.slice(0, at + variable.length + 2));
  return { kind: k, names: Object.fromEntries(mine.map((m, i) => [m, theirs[i]!])) };
}

/**
 * The path values of a template's parents given by key or by name (--bridge web): each, in the
 * template's order, resolved to the key of the item it names (a bridge named web: its id), within
 * the tenant if given; an unknown one is the 404 findItem says. A variable that names no kind
 * (a VLAN) is kept as it is.
 */
export async function resolveParents(api: Api, template: string, values: PathValues, tenant?: string): Promise<PathValues> {
  const out: PathValues = { ...values };
  for (const v of variables(template)) {
    const given = values[v];
    if (given === undefined || given === "") continue;
    const p = parentKind(template, v);
    if (!p) continue;
    const own: PathValues = {};
    for (const [mine, theirs] of Object.entries(p.names)) if (mine !== p.kind.key) own[mine] = out[theirs];
    const t = tenant && p.kind.info.resource.tenantField ? tenant : undefined;
    out[v] = p.kind.keyOf((await findItem(api, p.kind, given, own, t)).item);
  }
  return out;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A reference field's value (a bridge's inboundFilterId: a chain; one element of a port's
 * inboundMirrorIds) given by the id, key or name of the item it names, as that item's id, looked
 * up as an item argument is (findItem: its key, else the API's ?name= filter), within the tenant
 * of the item written when the referenced kind has tenants. Kept as given, with no request: a
 * UUID (the API judges it, a missing one is its 404 on the field), "" and the value of a field
 * whose kind has no names (only its id can name it). `memo` keeps what a run has looked up.
 */
export async function resolveRef(api: Api, target: Kind, given: string, tenant: string | undefined, field: string, memo?: Map<string, string>): Promise<string> {
  if (given === "" || UUID.test(given) || !target.get || (target.key === "id" && !target.has("name"))) return given;
  const t = tenant && target.info.resource.tenantField ? tenant : undefined;
  const at = `${target.command} ${toJson([given, t ?? null])}`;
  const known = memo?.get(at);
  if (known !== undefined) return known;
  const item = (await findItem(api, target, given, {}, t, field)).item;
  const id = typeof item["id"] === "string" ? item["id"] : target.keyOf(item);
  memo?.set(at, id);
  return id;
}

/**
 * A body's reference fields (flags, --data) with each value, or each element of a list, given by
 * name resolved to the id it names (resolveRef); `label` names a field in messages (--jump-chain-id).
 */
export async function resolveRefs(api: Api, kind: Kind, body: Record<string, unknown>, tenant: string | undefined, label: (field: string) => string): Promise<Record<string, unknown>> {
  const out = { ...body };
  for (const [name, v] of Object.entries(body)) {
    const target = kind.refOf(name);
    if (!target) continue;
    if (typeof v === "string") out[name] = await resolveRef(api, target, v, tenant, label(name));
    else if (Array.isArray(v)) {
      const ids: unknown[] = [];
      for (const x of v) ids.push(typeof x === "string" ? await resolveRef(api, target, x, tenant, label(name)) : x);
      out[name] = ids;
    }
  }
  return out;
}
