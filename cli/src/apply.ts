// vnm apply -f FILE|DIR|-: YAML or JSON documents, each `kind:` (a command name such as bridge,
// or none when the document is an item as the API shows it: its `uri` says its kind), the kind's
// fields, and `id:` naming the item (its key: an id, a subnet 10.0.0.0_24...); without it, the
// kind's natural key finds the item (its name within its parent, else the fields that make its
// key: a subnet's prefix and length). The parents' path variables are fields too (bridgeId), by
// key or by name; so are the items a field names (inboundFilterId: web-in, a list's each
// element), as the catalog says which kind a field names. Every document is checked before
// anything is written: first with reads (its kind and fields, its parents and the items it names
// there or made by an earlier document, the item it names, what cannot change), then each write
// whose parents and references are already there is sent as a server dry run (?dryRun=All: field
// values, access, quotas, names taken); one bad document and nothing is written. A document below
// or naming an item the file itself creates cannot be sent before that item exists: it is
// checked only when it is written. Then what is missing is created, what differs is updated
// (If-Match the version read), the rest left alone; one line per item says which. Parents and
// the items named go first (a kind's depth below its parents, then what a document names, then
// file order). --dry-run=server sends each write with ?dryRun=All (the API checks, stores
// nothing), =client sends none; --prune then deletes the items of the file's kinds it does not
// name, within its tenants and under its parents only.
// vnm diff -f prints what apply would change. vnm delete -f deletes the items the documents
// name, in the reverse order (children first).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { CliRoute } from "./catalog.ts";
import { type Api, objectOf } from "./client.ts";
import { kept } from "./commands.ts";
import { CliError, usage } from "./errors.ts";
import { toJson } from "./json.ts";
import { allKinds, type Kind, kindNamed, type PathValues, variables } from "./kinds.ts";
import { type Found, findItem, keyForm, listItems, parentKind, resolveRef } from "./resolve.ts";
import { readStdin } from "./stdin.ts";
import { clean, escapeJson, say } from "./text.ts";
import { isRecord, stringMember } from "@vnm/kit/values";

interface Doc {
  where: string;
  kind: Kind;
  id?: string;
  fields: Record<string, unknown>;
  /** The parents' path values as the document gives them (a key or a name). */
  values: PathValues;
}

/** The files of -f: a file, every .yaml/.yml/.json of a directory (sorted), or standard input (read to its end). */
async function sources(path: string): Promise<{ where: string; text: string }[]> {
  if (path === "-") return [{ where: "stdin", text: await readStdin() }];
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    throw usage(`-f ${path}: no such file or directory`);
  }
  if (!st.isDirectory()) return [{ where: path, text: readFileSync(path, "utf8") }];
  return readdirSync(path)
    .filter((f) => /\.(ya?ml|json)$/.test(f))
    .sort()
    .map((f) => ({ where: join(path, f), text: readFileSync(join(path, f), "utf8") }));
}

/** How many path variables sit above a document's item: parents first, children last. */
const depth = (d: Doc) => (routeOf(d)?.template ?? d.kind.info.itemTemplate).split("{").length - 1;

/** Every document of the files, parsed and checked (kind, field names): a bad one is a usage error. Parents first. */
export async function readDocs(paths: string[]): Promise<Doc[]> {
  const docs: Doc[] = [];
  for (const p of paths) {
    for (const { where, text } of await sources(p)) {
      const parsed = parseAllDocuments(text, { intAsBigInt: true });
      if (!Array.isArray(parsed)) continue; // an empty stream
      parsed.forEach((d, n) => {
        const at = `${where}${parsed.length > 1 ? ` (document ${n + 1})` : ""}`;
        if (d.errors.length) throw usage(`${at}: ${clean(d.errors[0]!.message.split("\n")[0]!)}`);
        const value: unknown = d.toJS();
        for (const [i, v] of (Array.isArray(value) ? value : value === null || value === undefined ? [] : [value]).entries()) {
          docs.push(docOf(Array.isArray(value) ? `${at} [${i}]` : at, v));
        }
      });
    }
  }
  if (docs.length === 0) throw usage("no documents in the files given");
  // A stable sort: within a depth, the files' order.
  return byReferences(docs.map((d, i) => ({ d, i, depth: depth(d) })).sort((a, b) => a.depth - b.depth || a.i - b.i).map((x) => x.d));
}

/** A field's value naming an item of another kind (one element of a list: `index`), as the document gives it. */
interface DocRef {
  field: string;
  index?: number;
  target: Kind;
  given: string;
}

/** The values of a document's writable fields that name items (the catalog's references), by id, key or name. */
function refsOfDoc(d: Doc): DocRef[] {
  const writable = new Set([...d.kind.writable("create"), ...d.kind.writable("update")].map((f) => f.name));
  return Object.entries(d.fields).flatMap(([field, v]): DocRef[] => {
    const target = writable.has(field) ? d.kind.refOf(field) : undefined;
    if (!target) return [];
    if (typeof v === "string" && v !== "") return [{ field, target, given: v }];
    return Array.isArray(v) ? v.flatMap((x, index) => (typeof x === "string" && x !== "" ? [{ field, index, target, given: x }] : [])) : [];
  });
}

/** Whether a document makes the item a value names: of its kind, by its id:, name: or natural key. */
const makes = (q: Doc, kind: Kind, given: string) => q.kind === kind && (q.id === given || [given, keyForm(kind, given)].includes(docKey(q) ?? ""));

/**
 * The documents with each after those that make the items it names (a bridge after the chain its
 * inboundFilterId names), else in the order given (parents first); documents naming each other
 * in a circle are a usage error.
 */
function byReferences(docs: Doc[]): Doc[] {
  const needs = new Map(docs.map((d) => [d, new Set(refsOfDoc(d).flatMap((r) => docs.filter((q) => q !== d && makes(q, r.target, r.given))))]));
  const out: Doc[] = [];
  const left = [...docs];
  while (left.length) {
    const next = left.findIndex((d) => [...needs.get(d)!].every((q) => out.includes(q)));
    if (next < 0) throw usage(`these documents name items each other makes, so none can be made first:\n${left.map((d) => `  ${d.where}`).join("\n")}`);
    out.push(...left.splice(next, 1));
  }
  return out;
}

/** Numbers within a double's range as numbers, the rest as BigInt (as the API's JSON). */
const exact = (v: unknown): unknown =>
  typeof v === "bigint" ? (Number.isSafeInteger(Number(v)) ? Number(v) : v) : Array.isArray(v) ? v.map(exact) : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, exact(x)])) : v;

/** The kind whose item path a `uri` ends with (an item as `get -o yaml` prints it). */
function kindOfUri(uri: unknown): Kind | undefined {
  if (typeof uri !== "string") return undefined;
  let path: string;
  try {
    path = new URL(uri, "http://x").pathname;
  } catch {
    return undefined;
  }
  return allKinds().find((k) => new RegExp(`${k.info.itemTemplate.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{\w+\\?\}/g, "[^/]+")}$`).test(path));
}

function docOf(where: string, v: unknown): Doc {
  const doc = exact(v);
  if (!isRecord(doc)) throw usage(`${where}: a document is an object with kind: and the kind's fields`);
  const { kind: name, id, ...rest } = doc;
  const kinds = () => allKinds().map((k) => k.command).join(", ");
  if (name !== undefined && typeof name !== "string") throw usage(`${where}: kind: must be a string (one of ${kinds()})`);
  const kind = name === undefined ? kindOfUri(rest["uri"]) : kindNamed(name);
  if (name === undefined && !kind) throw usage(`${where}: no kind: (one of ${kinds()})`);
  if (!kind) throw usage(`${where}: no kind ${clean(String(name))} (one of ${kinds()})`);
  const routes = [kind.create, kind.list, kind.get, ...kind.creates].filter((r): r is CliRoute => r !== undefined);
  const known = new Set([...kind.fields.map((f) => f.name), ...routes.flatMap((r) => kind.parents(r))]);
  const unknown = Object.keys(rest).filter((k) => !known.has(k));
  if (unknown.length) throw usage(`${where}: ${kind.command} has no field ${unknown.map(clean).join(", ")}`);
  if (id !== undefined && typeof id !== "string" && typeof id !== "number") throw usage(`${where}: id: must be a string`);
  // An item as the API shows it: its uri gives its key and its parents' where no field does.
  const fromUri = typeof rest["uri"] === "string" && name === undefined ? kind.valuesOf({ uri: new URL(rest["uri"], "http://x").href }) : {};
  const values: PathValues = {};
  for (const p of new Set(routes.flatMap((r) => kind.parents(r)))) {
    if (rest[p] !== undefined && rest[p] !== null) values[p] = String(rest[p]);
    else if (fromUri[p] !== undefined) values[p] = fromUri[p];
  }
  const key = id !== undefined ? String(id) : fromUri[kind.key];
  // A kind keyed by its id takes the id as a field of its create.
  if (key !== undefined && kind.key === "id" && kind.has("id")) rest["id"] = key;
  return { where, kind, id: key, fields: rest, values };
}

/** The create route of a document: its kind's, or the one of several (a port's, on a router or a bridge) whose parents it gives. */
function routeOf(d: Doc): CliRoute | undefined {
  return d.kind.create ?? d.kind.creates.find((r) => d.kind.parents(r).every((v) => d.values[v] !== undefined));
}

/** JSON equality of what a document says and what the item has. */
const same = (a: unknown, b: unknown) => toJson(a) === toJson(b);

/**
 * The fields that say which item a document without id: means: its name, for a kind with names;
 * else the required fields that cannot change (a route's), and for a kind keyed by its fields
 * rather than an id, its required fields (a subnet's prefix and length). The tenant is no part of
 * it. None (the document is always created) when the document does not give them all.
 */
export function naturalKey(kind: Kind, fields: Record<string, unknown>): string[] | undefined {
  if (kind.has("name") && typeof fields["name"] === "string") return ["name"];
  const required = kind.fields.filter((f) => f.behaviors.has("REQUIRED") && f.name !== kind.info.resource.tenantField && f.name !== "name");
  const fixed = required.filter((f) => f.behaviors.has("IMMUTABLE"));
  const names = (fixed.length ? fixed : kind.key !== "id" ? required : []).map((f) => f.name);
  return names.length && names.every((n) => fields[n] !== undefined && fields[n] !== null) ? names : undefined;
}

const describeKey = (d: Doc, names: string[]) => names.map((n) => `${n} ${clean(toJson(d.fields[n]))}`).join(", ");

/**
 * The item a document names, with its parents' keys: by id:, else by its natural key (of
 * `fields`, the document's with the items they name as ids); undefined when there is none.
 */
async function existing(api: Api, d: Doc, values: PathValues, fields: Record<string, unknown> = d.fields): Promise<Found | undefined> {
  const tenantField = d.kind.info.resource.tenantField;
  const tenant = tenantField ? stringMember(d.fields, tenantField) : undefined;
  try {
    if (d.id !== undefined) {
      const path = d.kind.path(d.kind.get, { ...values, [d.kind.key]: keyForm(d.kind, d.id) }, "get");
      const a = await api.call("GET", path);
      return { item: objectOf(a), path, etag: a.headers.get("etag") };
    }
    const names = naturalKey(d.kind, fields);
    if (!names || !d.kind.list) return undefined;
    const matches = await listItems(api, d.kind, values, tenant, Object.fromEntries(names.map((n) => [n, fields[n]])));
    if (matches.length > 1) {
      throw new CliError(`${matches.length} ${d.kind.command} items have ${describeKey(d, names)}: ${matches.map((i) => clean(d.kind.keyOf(i))).join(", ")}; give id:`, 1);
    }
    if (matches.length === 0) return undefined;
    const path = d.kind.path(d.kind.get, d.kind.valuesOf(matches[0]!), "get");
    const a = await api.call("GET", path);
    return { item: objectOf(a), path, etag: a.headers.get("etag") };
  } catch (err) {
    if (err instanceof CliError && err.status === 404) return undefined;
    throw err;
  }
}

interface Plan {
  d: Doc;
  route: CliRoute;
  /** The parents' keys, but those an earlier document makes. */
  values: PathValues;
  /** Parents an earlier document of the file makes: the variable and that document's plan. */
  after: [string, Plan][];
  /** The document's fields, the items they name by name given as ids (but those below). */
  fields: Record<string, unknown>;
  /** Items the fields name that an earlier document makes: filled in once it is made. */
  refsAfter: (DocRef & { maker: Plan })[];
  now?: Found;
  action: "create" | "update" | "unchanged";
  differs: [string, unknown][];
  /** The item once applied. */
  done?: Record<string, unknown>;
}

/**
 * How a document names its item on the command line: its id:, else its name:, else its natural
 * key's values joined by "_" (a composite key as the API writes it: a subnet's 10.6.0.0_24).
 */
function docKey(d: Doc): string | undefined {
  if (d.id !== undefined) return d.id;
  const names = naturalKey(d.kind, d.fields);
  return names ? names.map((n) => String(d.fields[n])).join("_") : undefined;
}

/** The earlier document that makes the item a parent value or a field names (by its id:, name: or natural key). */
function madeBy(plans: Plan[], kind: Kind, given: string): Plan | undefined {
  return plans.find((q) => makes(q.d, kind, given) || (q.d.kind === kind && q.now !== undefined && kind.keyOf(q.now.item) === keyForm(kind, given)));
}

/** The id of an item a field names (the key of a kind keyed by its id). */
const idOf = (kind: Kind, item: Record<string, unknown>) => (typeof item["id"] === "string" ? item["id"] : kind.keyOf(item));

/** Fields with one reference set to an id. */
function withRef(fields: Record<string, unknown>, r: DocRef, id: string): Record<string, unknown> {
  if (r.index === undefined) return { ...fields, [r.field]: id };
  const list = [...(fields[r.field] as unknown[])];
  list[r.index] = id;
  return { ...fields, [r.field]: list };
}

/**
 * The items a document's fields name, as ids: an earlier document's item (once it is made, when
 * that document creates it), else one the gateway has (resolveRef: by key, else by its name
 * within the document's tenant; a UUID as it is).
 */
async function refsOfPlan(api: Api, d: Doc, earlier: Plan[], memo: Map<string, string>, tenant: string | undefined): Promise<Pick<Plan, "fields" | "refsAfter">> {
  let fields = d.fields;
  const refsAfter: Plan["refsAfter"] = [];
  for (const r of refsOfDoc(d)) {
    const maker = madeBy(earlier, r.target, r.given);
    if (maker && !maker.now) {
      refsAfter.push({ ...r, maker });
      continue;
    }
    if (maker?.now) {
      fields = withRef(fields, r, idOf(r.target, maker.now.item));
      continue;
    }
    try {
      fields = withRef(fields, r, await resolveRef(api, r.target, r.given, tenant, r.field, memo));
    } catch (err) {
      if (err instanceof CliError && err.status === 404) throw new CliError(`${r.field}: no ${r.target.command} has the id or name ${JSON.stringify(clean(r.given))}, and no document here makes one`, 1, 404);
      throw err;
    }
  }
  return { fields, refsAfter };
}

/** One document checked against what the gateway has: its parents, the items it names, its item, what would change. */
async function planOf(api: Api, d: Doc, earlier: Plan[], parents: Map<string, string>, refs: Map<string, string>): Promise<Plan> {
  const route = routeOf(d);
  if (!route) {
    const given = d.kind.creates.map((r) => d.kind.parents(r).join(" and ")).join(", or ");
    throw new CliError(d.kind.creates.length ? `a ${d.kind.command} needs ${given}` : `a ${d.kind.command} cannot be created (the API has no create for it)`, 2);
  }
  const tenantField = d.kind.info.resource.tenantField;
  const tenant = tenantField ? stringMember(d.fields, tenantField) : undefined;
  const values: PathValues = {};
  const after: [string, Plan][] = [];
  for (const v of d.kind.parents(route)) {
    const given = d.values[v];
    if (given === undefined) throw new CliError(`a ${d.kind.command} needs ${v}:`, 2);
    const p = parentKind(route.template, v);
    if (!p) {
      values[v] = given;
      continue;
    }
    const maker = madeBy(earlier, p.kind, given);
    if (maker?.now) {
      values[v] = p.kind.keyOf(maker.now.item);
      continue;
    }
    if (maker) {
      after.push([v, maker]);
      continue;
    }
    const own: PathValues = {};
    for (const [mine, theirs] of Object.entries(p.names)) if (mine !== p.kind.key) own[mine] = values[theirs];
    const missing = () => new CliError(`${v}: no ${p.kind.command} has the key or name ${JSON.stringify(clean(given))}, and no document here makes one`, 1, 404);
    // Below a parent the file makes, no item is there yet.
    if (Object.values(own).some((x) => x === undefined)) throw missing();
    try {
      const t = tenant && p.kind.info.resource.tenantField ? tenant : undefined;
      // Many documents below one parent: it is looked up once.
      const memo = `${p.kind.command} ${toJson([given, own, t ?? null])}`;
      const key = parents.get(memo) ?? p.kind.keyOf((await findItem(api, p.kind, given, own, t)).item);
      parents.set(memo, key);
      values[v] = key;
    } catch (err) {
      if (err instanceof CliError && err.status === 404) throw missing();
      throw err;
    }
  }
  const { fields, refsAfter } = await refsOfPlan(api, d, earlier, refs, tenant);
  // Below a parent this file makes, or known by an item it makes (a binding by its port), the item is new.
  const key = naturalKey(d.kind, fields);
  const now = after.length || refsAfter.some((r) => d.id === undefined && key?.includes(r.field)) ? undefined : await existing(api, d, values, fields);
  if (!now) return { d, route, values, after, fields, refsAfter, action: "create", differs: [] };
  // What the document says of the fields an item shows (a write-only one, a password, is never read back).
  const shown = new Set(d.kind.writable("create").filter((f) => !f.behaviors.has("INPUT_ONLY")).map((f) => f.name));
  const differs = Object.entries(fields).filter(([k, v]) => shown.has(k) && !variables(d.kind.info.itemTemplate).includes(k) && !same(v, now.item[k]));
  if (differs.length === 0) return { d, route, values, after, fields, refsAfter, now, action: "unchanged", differs };
  const updatable = new Set(d.kind.writable("update").map((f) => f.name));
  const fixed = differs.filter(([k]) => !updatable.has(k)).map(([k]) => k);
  if (fixed.length || !d.kind.update) {
    throw new CliError(`${d.kind.command} ${clean(d.kind.keyOf(now.item))}: ${fixed.length ? fixed.join(", ") : "it"} cannot change once created; delete it first`, 1);
  }
  return { d, route, values, after, fields, refsAfter, now, action: "update", differs };
}

/** Every document checked, in order, before anything is sent; any failing is the whole file's failure (every one said). */
async function plan(api: Api, docs: Doc[]): Promise<Plan[]> {
  const plans: Plan[] = [];
  const parents = new Map<string, string>();
  const refs = new Map<string, string>();
  let failed: CliError | undefined;
  for (const d of docs) {
    try {
      plans.push(await planOf(api, d, plans, parents, refs));
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === 3) throw err;
      say(`${d.where}: ${err.message}\n`);
      failed = !failed || err.exitCode > failed.exitCode ? err : failed;
    }
  }
  if (failed) {
    say("nothing was sent\n");
    throw new CliError("", failed.exitCode);
  }
  return plans;
}

/**
 * --dry-run, as kubectl's: `none` sends the writes; `client` sends none (every document is
 * checked all the same); `server` sends each with ?dryRun=All, so the API runs every check of the
 * write and stores nothing (docs/api.md, "Dry runs").
 */
export type DryRun = "none" | "client" | "server";

/** What a line of output adds in a dry run, as kubectl prints it. */
const DRY_SUFFIX: Record<DryRun, string> = { none: "", client: " (dry run)", server: " (server dry run)" };

/** A write's path in a server dry run. */
const dryPath = (path: string, dryRun: DryRun) => (dryRun === "server" ? `${path}${path.includes("?") ? "&" : "?"}dryRun=All` : path);

/** The parents' keys of a plan's item: those it found, and those of the items earlier documents made. */
function valuesOf(p: Plan): PathValues {
  const values = { ...p.values };
  for (const [v, maker] of p.after) {
    if (!maker.done) throw new CliError(`not applied: its ${v} (${maker.d.where}) was not`, 1);
    values[v] = maker.d.kind.keyOf(maker.done);
  }
  return values;
}

/** A plan's fields with the items earlier documents made filled in as their ids. */
function filled(p: Plan): Record<string, unknown> {
  let fields = p.fields;
  for (const r of p.refsAfter) {
    if (!r.maker.done) throw new CliError(`not applied: its ${r.field} (${r.maker.d.where}) was not`, 1);
    fields = withRef(fields, r, idOf(r.target, r.maker.done));
  }
  return fields;
}

async function send(api: Api, p: Plan, dryRun: DryRun): Promise<Record<string, unknown>> {
  const { d } = p;
  if (p.action === "unchanged") return p.now!.item;
  const fields = filled(p);
  if (p.action === "update") {
    const now = p.now!;
    const body = { ...kept(d.kind, now.item), ...Object.fromEntries(p.differs.map(([k]) => [k, fields[k]])) };
    const path = d.kind.path(d.kind.update, d.kind.valuesOf(now.item), "update");
    return objectOf(await api.call("PUT", dryPath(path, dryRun), body, now.etag ? { "if-match": now.etag } : {}));
  }
  const body = Object.fromEntries(Object.entries(fields).filter(([k]) => d.kind.writable("create").some((f) => f.name === k)));
  return objectOf(await api.call("POST", dryPath(d.kind.path(p.route, valuesOf(p), "create"), dryRun), body));
}

/**
 * Whether a plan's write needs an item an earlier document creates (a parent, or an item a field
 * names): the server cannot judge it before that item exists.
 */
const needsNew = (p: Plan) => (p.action === "create" && p.after.length > 0) || (p.action !== "unchanged" && p.refsAfter.length > 0);

/**
 * Whether a dry run can show a plan's item without asking the server: with --dry-run=client
 * always; with server, when it needs an item an earlier document makes (the server never made
 * it, so there is nothing to write below or to name).
 */
const unsent = (p: Plan, dryRun: DryRun) => dryRun === "client" || (dryRun === "server" && needsNew(p));

/**
 * Before the first write: every write that needs no item of this run sent as a server dry run
 * (?dryRun=All: the API runs every check of it and stores nothing). Any refusal is said for its
 * document, every one, then `nothing was written`, exit 1. Each is judged alone: what needs an
 * item the file creates, and what documents do only together (two that fit a quota alone), are
 * judged when written.
 */
async function precheck(api: Api, plans: Plan[]): Promise<void> {
  let failed = false;
  for (const p of plans) {
    if (p.action === "unchanged" || needsNew(p)) continue;
    try {
      await send(api, p, "server");
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === 3) throw err;
      say(`${p.d.where}: ${err.message}\n`);
      failed = true;
    }
  }
  if (failed) {
    say("nothing was written\n");
    throw new CliError("", 1);
  }
}

/** Applies every document, parents first, once all are checked; then prunes (--prune); exit 1 if any failed. */
export async function apply(api: Api, paths: string[], opts: { dryRun?: DryRun; prune?: Prune } = {}): Promise<void> {
  const dryRun = opts.dryRun ?? "none";
  const docs = await readDocs(paths);
  if (opts.prune) checkPrunable(docs);
  const plans = await plan(api, docs);
  // A server dry run is that check already; a client one asks the server nothing.
  if (dryRun === "none") await precheck(api, plans);
  let failed = false;
  for (const p of plans) {
    try {
      const outcome = p.action === "create" ? "created" : p.action === "update" ? "updated" : "unchanged";
      if (unsent(p, dryRun)) {
        const key = p.now ? p.d.kind.keyOf(p.now.item) : (docKey(p.d) ?? "(new)");
        const made = [...(p.action === "create" ? p.after : []), ...p.refsAfter.map((r): [string, Plan] => [r.field, r.maker])];
        const why = dryRun === "server" ? ` (server dry run: not sent, ${[...new Set(made.map(([v, m]) => `its ${v} is made by ${m.d.where}`))].join(", ")})` : DRY_SUFFIX[dryRun];
        process.stdout.write(`${p.d.kind.command}/${clean(key)} ${outcome}${why}\n`);
        continue;
      }
      p.done = await send(api, p, dryRun);
      process.stdout.write(`${p.d.kind.command}/${clean(p.d.kind.keyOf(p.done))} ${outcome}${DRY_SUFFIX[dryRun]}\n`);
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === 3) throw err;
      say(`${p.d.where}: ${err.message}\n`);
      failed = true;
    }
  }
  // Nothing is pruned after a failure: what the file names is not all there.
  if (failed) throw new CliError("", 1);
  if (opts.prune) await prune(api, plans, opts.prune, dryRun);
}

/**
 * --prune: which items apply may delete besides applying. kubectl's needs a label selector or
 * --all; items here have no labels, so `all` (every item in scope) or `prefix` (only those whose
 * name starts with it) says which.
 */
export interface Prune {
  all: boolean;
  prefix?: string;
}

/** Where prune looks for one kind: the list of its items under the parents a document names, within its tenant. */
interface PruneScope {
  kind: Kind;
  values: PathValues;
  tenant?: string;
  /** The keys of the items the file names there. */
  keep: Set<string>;
  depth: number;
}

/** A top-level kind: one that no parent's path holds. */
const topLevel = (kind: Kind, route: CliRoute) => kind.parents(route).length === 0;

/**
 * Before anything is sent: every document of a top-level kind names its tenant (prune looks only
 * within the tenants the file names), and no kind is one prune cannot scope (a kind without
 * tenants, such as hosts; a kind whose list is not under the parent it is made under, such as a
 * port) — usage errors, exit 2.
 */
function checkPrunable(docs: Doc[]): void {
  const problems: string[] = [];
  for (const d of docs) {
    const route = routeOf(d);
    if (!route || !d.kind.list) {
      problems.push(`${d.where}: --prune cannot look for other ${d.kind.command} items (the API lists none where this one is made)`);
      continue;
    }
    if (d.kind.list.template !== route.template) {
      problems.push(`${d.where}: --prune cannot scope ${d.kind.command} items: they are listed at ${d.kind.list.template}, not under the parent the document names`);
      continue;
    }
    if (!topLevel(d.kind, route)) continue;
    const field = d.kind.info.resource.tenantField;
    if (!field) problems.push(`${d.where}: --prune does not prune ${d.kind.command} items: the kind has no tenant to scope it`);
    else if (typeof d.fields[field] !== "string" || d.fields[field] === "") problems.push(`${d.where}: --prune needs ${field}: on every ${d.kind.command} (only items of the tenants the file names are pruned)`);
  }
  if (problems.length > 0) throw usage(`${problems.join("\n")}\nnothing was sent`);
}

/** The scopes of the applied plans: per kind, parents and tenant, what the file keeps there. */
function scopesOf(plans: Plan[], dryRun: DryRun): PruneScope[] {
  const scopes = new Map<string, PruneScope>();
  for (const p of plans) {
    // Below a parent that is only now made (or, in a dry run, never was), nothing else is there.
    if (p.after.length > 0 && (dryRun !== "none" || p.after.some(([, m]) => !m.done))) continue;
    const values = valuesOf(p);
    const field = p.d.kind.info.resource.tenantField;
    const tenant = topLevel(p.d.kind, p.route) && field ? String(p.d.fields[field]) : undefined;
    const id = `${p.d.kind.command} ${toJson([values, tenant ?? null])}`;
    let scope = scopes.get(id);
    if (!scope) {
      scope = { kind: p.d.kind, values, tenant, keep: new Set(), depth: depth(p.d) };
      scopes.set(id, scope);
    }
    const item = p.done ?? p.now?.item;
    if (item) scope.keep.add(p.d.kind.keyOf(item));
  }
  // Children before their parents, as delete -f.
  return [...scopes.values()].sort((a, b) => b.depth - a.depth);
}

/** --prune: the items of the file's kinds, in its scopes, that it does not name, deleted (or, in a dry run, said). */
async function prune(api: Api, plans: Plan[], how: Prune, dryRun: DryRun): Promise<void> {
  let failed = false;
  for (const scope of scopesOf(plans, dryRun)) {
    const { kind } = scope;
    const items = await listItems(api, kind, scope.values, scope.tenant);
    for (const item of items) {
      const key = kind.keyOf(item);
      if (scope.keep.has(key)) continue;
      if (scope.tenant !== undefined && item[kind.info.resource.tenantField ?? ""] !== scope.tenant) continue;
      if (!how.all && !(typeof item["name"] === "string" && how.prefix !== undefined && item["name"].startsWith(how.prefix))) continue;
      try {
        if (dryRun !== "client") await api.call("DELETE", dryPath(kind.path(kind.delete, kind.valuesOf(item), "delete"), dryRun));
        process.stdout.write(`${kind.command}/${clean(key)} pruned${DRY_SUFFIX[dryRun]}\n`);
      } catch (err) {
        if (!(err instanceof CliError) || err.exitCode === 3) throw err;
        // Gone meanwhile (a parent pruned before it took it): nothing left to prune.
        if (err.status === 404) continue;
        say(`${kind.command}/${clean(key)}: ${err.message}\n`);
        failed = true;
      }
    }
  }
  if (failed) throw new CliError("", 1);
}

const shownValue = (v: unknown) => escapeJson(toJson(v));

/** A field's value as diff shows it: as JSON; one naming an item an earlier document makes, as given, and by which. */
function diffValue(p: Plan, k: string, v: unknown): string {
  const made = [...new Set(p.refsAfter.filter((r) => r.field === k).map((r) => r.maker.d.where))];
  return `${shownValue(v)}${made.length ? ` (made by ${made.join(", ")})` : ""}`;
}

/** vnm diff -f: what apply would do, item by item (- now, + after), sending nothing; exit 1 when anything would change. */
export async function diff(api: Api, paths: string[]): Promise<void> {
  const plans = await plan(api, await readDocs(paths));
  const out: string[] = [];
  for (const p of plans) {
    if (p.action === "unchanged") continue;
    if (p.action === "update") {
      out.push(`${p.d.kind.command}/${clean(p.d.kind.keyOf(p.now!.item))} (${p.d.where}): updated`);
      for (const [k, v] of p.differs) out.push(`-  ${clean(k)}: ${shownValue(p.now!.item[k])}`, `+  ${clean(k)}: ${diffValue(p, k, v)}`);
      continue;
    }
    const under = [...Object.entries(p.values).map(([v, x]) => `${v} ${clean(x ?? "")}`), ...p.after.map(([v, m]) => `${v} made by ${m.d.where}`)];
    out.push(`${p.d.kind.command} (${p.d.where}): created${under.length ? ` under ${under.join(", ")}` : ""}`);
    for (const [k, v] of Object.entries(p.fields)) if (p.d.kind.writable("create").some((f) => f.name === k)) out.push(`+  ${clean(k)}: ${k === "password" ? '"(hidden)"' : diffValue(p, k, v)}`);
  }
  if (out.length === 0) return;
  process.stdout.write(`${out.join("\n")}\n`);
  throw new CliError("", 1);
}

/**
 * A document's fields with the items its natural key names by name as their ids (a binding's
 * portId: web-1), for delete -f to find it; one not there is left as given (nothing will match).
 */
async function keyRefs(api: Api, d: Doc, tenant: string | undefined): Promise<Record<string, unknown>> {
  const key = d.id === undefined ? naturalKey(d.kind, d.fields) : undefined;
  let fields = d.fields;
  for (const r of refsOfDoc(d).filter((x) => key?.includes(x.field))) {
    try {
      fields = withRef(fields, r, await resolveRef(api, r.target, r.given, tenant, r.field));
    } catch (err) {
      if (!(err instanceof CliError) || err.status !== 404) throw err;
    }
  }
  return fields;
}

/**
 * vnm delete -f: the items the documents name (by id:, else the natural key), children before
 * their parents (the reverse of apply's order). An item that is not there is an error, unless
 * --ignore-not-found, or its parent was deleted earlier in the run (a parent's delete takes its
 * children).
 */
export async function deleteFiles(api: Api, paths: string[], ignoreNotFound = false): Promise<void> {
  const docs = (await readDocs(paths)).reverse();
  const deleted = new Set<string>();
  let failed = false;
  for (const d of docs) {
    const route = routeOf(d) ?? d.kind.list ?? d.kind.get;
    const tenantField = d.kind.info.resource.tenantField;
    const tenant = tenantField ? stringMember(d.fields, tenantField) : undefined;
    // A parent this run deleted (by key or name; a path's, or an item a field names: a member's
    // poolId) makes a 404 no failure: its delete took this item.
    const orphan = () =>
      (route ? d.kind.parents(route) : []).some((v) => {
        const p = route ? parentKind(route.template, v) : undefined;
        return p !== undefined && d.values[v] !== undefined && deleted.has(`${p.kind.command}/${keyForm(p.kind, d.values[v]!)}`);
      }) ||
      Object.entries(d.fields).some(([k, v]) => {
        const named = typeof v === "string" ? d.kind.refOf(k) : undefined;
        return named !== undefined && named !== d.kind && deleted.has(`${named.command}/${v}`);
      });
    try {
      if (d.id === undefined && !naturalKey(d.kind, d.fields)) throw usage(`neither id: nor the ${d.kind.command}'s ${d.kind.has("name") ? "name:" : "natural key"} says which to delete`);
      let found: Found | undefined;
      try {
        const values: PathValues = {};
        for (const v of route ? d.kind.parents(route) : []) {
          const p = parentKind(route!.template, v);
          const given = d.values[v];
          if (!p || given === undefined) {
            values[v] = given;
            continue;
          }
          const own: PathValues = {};
          for (const [mine, theirs] of Object.entries(p.names)) if (mine !== p.kind.key) own[mine] = values[theirs];
          values[v] = p.kind.keyOf((await findItem(api, p.kind, given, own, tenant && p.kind.info.resource.tenantField ? tenant : undefined)).item);
        }
        found = await existing(api, d, values, await keyRefs(api, d, tenant));
        if (!found) throw new CliError(`error 404: no such ${d.kind.command}${d.id !== undefined ? ` ${clean(d.id)}` : ` with ${describeKey(d, naturalKey(d.kind, d.fields)!)}`}`, 1, 404);
        await api.call("DELETE", d.kind.path(d.kind.delete, d.kind.valuesOf(found.item), "delete"), undefined, found.etag ? { "if-match": found.etag } : {});
      } catch (err) {
        if (err instanceof CliError && err.status === 404 && (ignoreNotFound || orphan())) {
          const what = clean(found ? d.kind.keyOf(found.item) : (docKey(d) ?? "?"));
          process.stdout.write(`${d.kind.command}/${what} ${orphan() ? "already deleted with its parent" : "not found"}\n`);
          continue;
        }
        throw err;
      }
      const key = d.kind.keyOf(found.item);
      deleted.add(`${d.kind.command}/${key}`);
      if (typeof found.item["name"] === "string") deleted.add(`${d.kind.command}/${found.item["name"]}`);
      process.stdout.write(`${d.kind.command}/${clean(key)} deleted\n`);
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === 3) throw err;
      say(`${d.where}: ${err.message}\n`);
      failed = true;
    }
  }
  if (failed) throw new CliError("", 1);
}
