// vnm apply -f FILE|DIR|-: YAML or JSON documents, each `kind:` (a command name such as bridge),
// the kind's fields, and `id:` naming the item (its key: an id, or a DHCP host's MAC...); the
// parents' path variables are fields too (bridgeId). What is missing is created, what differs is
// updated (If-Match the version read), the rest left alone; one line per item says which.
// vnm delete -f FILE deletes the items the documents name.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { type Api, objectOf } from "./client.ts";
import { deleteItem, kept } from "./commands.ts";
import { CliError, usage } from "./errors.ts";
import { toJson } from "./json.ts";
import { allKinds, type Kind, kindNamed, type PathValues, variables } from "./kinds.ts";
import { findItem } from "./resolve.ts";
import { clean, say } from "./text.ts";
import { isRecord, stringMember } from "@vnm/kit/values";

interface Doc {
  where: string;
  kind: Kind;
  id?: string;
  fields: Record<string, unknown>;
  values: PathValues;
}

/** The files of -f: a file, every .yaml/.yml/.json of a directory (sorted), or standard input. */
function sources(path: string): { where: string; text: string }[] {
  if (path === "-") return [{ where: "stdin", text: readFileSync(0, "utf8") }];
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

/** Every document of the files, checked before anything is sent: a bad one is a usage error. */
export function readDocs(paths: string[]): Doc[] {
  const docs: Doc[] = [];
  for (const { where, text } of paths.flatMap(sources)) {
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
  if (docs.length === 0) throw usage("no documents in the files given");
  return docs;
}

/** Numbers within a double's range as numbers, the rest as BigInt (as the API's JSON). */
const exact = (v: unknown): unknown =>
  typeof v === "bigint" ? (Number.isSafeInteger(Number(v)) ? Number(v) : v) : Array.isArray(v) ? v.map(exact) : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, exact(x)])) : v;

function docOf(where: string, v: unknown): Doc {
  const doc = exact(v);
  if (!isRecord(doc)) throw usage(`${where}: a document is an object with kind: and the kind's fields`);
  const { kind: name, id, ...rest } = doc;
  if (typeof name !== "string") throw usage(`${where}: no kind: (one of ${allKinds().map((k) => k.command).join(", ")})`);
  const kind = kindNamed(name);
  if (!kind) throw usage(`${where}: no kind ${clean(name)} (one of ${allKinds().map((k) => k.command).join(", ")})`);
  const known = new Set([...kind.fields.map((f) => f.name), ...kind.parents(kind.create ?? kind.list)]);
  const unknown = Object.keys(rest).filter((k) => !known.has(k));
  if (unknown.length) throw usage(`${where}: ${kind.command} has no field ${unknown.map(clean).join(", ")}`);
  const values: PathValues = {};
  for (const p of new Set([...kind.parents(kind.create), ...kind.parents(kind.get)])) if (rest[p] !== undefined) values[p] = String(rest[p]);
  if (id !== undefined && typeof id !== "string" && typeof id !== "number") throw usage(`${where}: id: must be a string`);
  // A kind keyed by its id takes the id as a field of its create.
  if (id !== undefined && kind.key === "id" && kind.has("id")) rest["id"] = String(id);
  return { where, kind, id: id === undefined ? undefined : String(id), fields: rest, values };
}

/** JSON equality of what a document says and what the item has. */
const same = (a: unknown, b: unknown) => toJson(a) === toJson(b);

type Outcome = "created" | "updated" | "unchanged";

async function existing(api: Api, d: Doc): Promise<{ item: Record<string, unknown>; etag: string | null } | undefined> {
  const key = d.id ?? (d.kind.has("name") ? stringMember(d.fields, "name") : undefined);
  if (key === undefined) return undefined;
  try {
    if (d.id !== undefined) {
      const path = d.kind.path(d.kind.get, { ...d.values, [d.kind.key]: d.id }, "get");
      const a = await api.call("GET", path);
      return { item: objectOf(a), etag: a.headers.get("etag") };
    }
    // No id: the item of that name, if there is one (several is findItem's error).
    const tenantField = d.kind.info.resource.tenantField;
    const tenant = tenantField ? stringMember(d.fields, tenantField) : undefined;
    return await findItem(api, d.kind, key, d.values, tenant);
  } catch (err) {
    if (err instanceof CliError && err.status === 404) return undefined;
    throw err;
  }
}

async function applyOne(api: Api, d: Doc): Promise<{ outcome: Outcome; item: Record<string, unknown> }> {
  const now = await existing(api, d);
  if (!now) {
    const body = Object.fromEntries(Object.entries(d.fields).filter(([k]) => d.kind.writable("create").some((f) => f.name === k)));
    const created = await api.call("POST", d.kind.path(d.kind.create, d.values, "create"), body);
    return { outcome: "created", item: objectOf(created) };
  }
  // What the document says of the fields an item shows (a write-only one, a password, is never read back).
  const shown = new Set(d.kind.writable("create").filter((f) => !f.behaviors.has("INPUT_ONLY")).map((f) => f.name));
  const differs = Object.entries(d.fields).filter(([k, v]) => shown.has(k) && !variables(d.kind.info.itemTemplate).includes(k) && !same(v, now.item[k]));
  if (differs.length === 0) return { outcome: "unchanged", item: now.item };
  const updatable = new Set(d.kind.writable("update").map((f) => f.name));
  const fixed = differs.filter(([k]) => !updatable.has(k)).map(([k]) => k);
  if (fixed.length || !d.kind.update) {
    throw new CliError(`${d.kind.command} ${clean(d.kind.keyOf(now.item))}: ${fixed.length ? fixed.join(", ") : "it"} cannot change once created; delete it first`, 1);
  }
  const body = { ...kept(d.kind, now.item), ...Object.fromEntries(differs) };
  const path = d.kind.path(d.kind.update, d.kind.valuesOf(now.item), "update");
  const updated = await api.call("PUT", path, body, now.etag ? { "if-match": now.etag } : {});
  return { outcome: "updated", item: objectOf(updated) };
}

/** Applies every document in order (parents before their children, as written); exit 1 if any failed. */
export async function apply(api: Api, paths: string[]): Promise<void> {
  const docs = readDocs(paths);
  let failed = false;
  for (const d of docs) {
    try {
      const { outcome, item } = await applyOne(api, d);
      process.stdout.write(`${d.kind.command}/${clean(d.kind.keyOf(item))} ${outcome}\n`);
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === 3) throw err;
      say(`${d.where}: ${err.message}\n`);
      failed = true;
    }
  }
  if (failed) throw new CliError("", 1);
}

/** vnm delete -f: the items the documents name (by id:, else by name:). */
export async function deleteFiles(api: Api, paths: string[]): Promise<void> {
  let failed = false;
  for (const d of readDocs(paths)) {
    const key = d.id ?? stringMember(d.fields, "name");
    try {
      if (key === undefined) throw usage(`${d.where}: neither id: nor name: says which ${d.kind.command} to delete`);
      const tenantField = d.kind.info.resource.tenantField;
      await deleteItem(api, d.kind, key, d.values, tenantField ? stringMember(d.fields, tenantField) : undefined);
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === 3) throw err;
      say(`${d.where}: ${err.message}\n`);
      failed = true;
    }
  }
  if (failed) throw new CliError("", 1);
}
