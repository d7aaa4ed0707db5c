// The part of the kit's catalog the CLI uses, as plain data: each kind (its RPCs, item path,
// parent, fields and resource options) and the routes of those RPCs. build.mjs takes it from
// the kit's catalog when it builds (src/snapshot.ts) and puts it into the bundle, so the bin
// reads no proto file and does not rebuild the catalog each time it starts; run from the
// sources (the unit tests), it is taken from the proto files the same way.
import type { Catalog, FieldInfo, KindInfo, ResourceInfo, Route } from "@vnm/kit";
import { loadCatalog, references, writableFields } from "@vnm/kit";

/** A template with its variables as "{}" (the kit's templateShape; the bundle carries no kit). */
const templateShape = (t: string) => t.replace(/[^/]*\{[^/]*/g, "{}");

export type Field = Pick<FieldInfo, "name" | "type" | "repeated" | "behaviors" | "link" | "internal" | "jsonObject" | "jsonValue"> & {
  /** The kind whose item (or, repeated, items) the field holds the id of ("policy.Chain"): the kit's references, as the console's. */
  ref?: string;
};

export interface CliKind extends Pick<KindInfo, "kind" | "service" | "rpcs" | "itemTemplate" | "parent"> {
  message: { name: string; fields: Field[]; byName: Map<string, Field> };
  resource: Pick<ResourceInfo, "displayName" | "mediaType" | "tenantField">;
  /** The fields a create and an update may send, as the kit defines them (writableFields). */
  writable: { create: string[]; update: string[] };
  /**
   * A kind created under one of several parents that are no kind's parent of it (a port: on a
   * router or on a bridge) has no create RPC of its own: these are the RPCs that create one.
   */
  creates: string[];
  /** What an item does besides its own verbs: POST or DELETE at its path plus a word (a port's link). */
  actions: CliAction[];
}

export interface CliAction {
  /** The last segment of its path ("link"). */
  word: string;
  method: "POST" | "DELETE";
  rpc: string;
  /** A POST's required body fields, given as arguments after the item ("peerId"). */
  args: string[];
}

export interface CliRoute extends Pick<Route, "service" | "rpc" | "template"> {
  queryFields: Set<string>;
}

export interface CliCatalog {
  kinds: CliKind[];
  routes: CliRoute[];
}

type Plain<T> = { [K in keyof T]: T[K] extends Set<infer V> ? V[] : T[K] extends Map<string, unknown> ? never : T[K] extends object ? Plain<T[K]> : T[K] };

/** What the bundle carries: the CLI's catalog as JSON. */
export interface Snapshot {
  kinds: (Omit<Plain<CliKind>, "message"> & { message: { name: string; fields: Plain<Field>[] } })[];
  routes: Plain<CliRoute>[];
}

/** The POST routes answering an item of a kind without a create RPC, with the kind's message as their body. */
function createsOf(c: Catalog, k: KindInfo): string[] {
  if (k.rpcs.create) return [];
  return c.routes.filter((r) => r.method === "POST" && r.service === k.service && r.shape.kind === "item" && r.shape.item === k.message && r.bodyField?.message === k.message).map((r) => r.rpc);
}

/** POST and DELETE routes at a kind's item path plus one word that are no kind's own verbs nor creates (a port's link and unlink). */
function actionsOf(c: Catalog, k: KindInfo, taken: Set<string>): CliAction[] {
  const item = templateShape(k.itemTemplate);
  return c.routes.flatMap((r): CliAction[] => {
    const word = /^\/([a-z_]+)$/.exec(templateShape(r.template).slice(item.length))?.[1];
    if (!word || !templateShape(r.template).startsWith(`${item}/`) || r.service !== k.service || taken.has(`${r.service}/${r.rpc}`)) return [];
    // A POST answering the item itself (not a new item of another message), a DELETE answering nothing.
    const fits = (r.method === "POST" && r.shape.kind === "item" && r.shape.item === k.message) || (r.method === "DELETE" && r.shape.kind === "empty");
    if (!fits) return [];
    const args = r.method === "POST" ? (r.bodyField?.message?.fields.filter((f) => f.behaviors.has("REQUIRED")).map((f) => f.name) ?? []) : [];
    return [{ word, method: r.method === "POST" ? "POST" : "DELETE", rpc: r.rpc, args }];
  });
}

export function snapshot(c: Catalog): Snapshot {
  const kinds = [...c.kinds.values()];
  const refOf = references(c);
  const creates = new Map(kinds.map((k) => [k.kind, createsOf(c, k)]));
  const taken = new Set(kinds.flatMap((k) => [...Object.values(k.rpcs), ...creates.get(k.kind)!].map((rpc) => `${k.service}/${rpc}`)));
  const actions = new Map(kinds.map((k) => [k.kind, actionsOf(c, k, taken)]));
  const used = (r: Route) =>
    kinds.some((k) => k.service === r.service && [...Object.values(k.rpcs), ...creates.get(k.kind)!, ...actions.get(k.kind)!.map((a) => a.rpc)].includes(r.rpc));
  return {
    kinds: kinds.map((k) => ({
      kind: k.kind,
      service: k.service,
      rpcs: k.rpcs,
      itemTemplate: k.itemTemplate,
      parent: k.parent,
      message: {
        name: k.message.name,
        fields: k.message.fields.map((f) => ({
          name: f.name,
          type: f.type,
          repeated: f.repeated,
          behaviors: [...f.behaviors],
          link: f.link,
          internal: f.internal,
          jsonObject: f.jsonObject,
          jsonValue: f.jsonValue,
          ...(refOf(k, f) ? { ref: refOf(k, f) } : {}),
        })),
      },
      resource: { displayName: k.resource.displayName, mediaType: k.resource.mediaType, tenantField: k.resource.tenantField },
      writable: { create: writableFields(k.message, "create").map((f) => f.name), update: writableFields(k.message, "update").map((f) => f.name) },
      creates: creates.get(k.kind)!,
      actions: actions.get(k.kind)!,
    })),
    routes: c.routes.filter(used).map((r) => ({ service: r.service, rpc: r.rpc, template: r.template, queryFields: [...r.queryFields.keys()] })),
  };
}

export function fromSnapshot(s: Snapshot): CliCatalog {
  return {
    kinds: s.kinds.map((k) => {
      const fields = k.message.fields.map((f) => ({ ...f, behaviors: new Set(f.behaviors) }));
      return { ...k, message: { name: k.message.name, fields, byName: new Map(fields.map((f) => [f.name, f])) } };
    }),
    routes: s.routes.map((r) => ({ ...r, queryFields: new Set(r.queryFields) })),
  };
}

declare const __VNM_CATALOG__: Snapshot | undefined;

let loaded: CliCatalog | undefined;

export function cliCatalog(): CliCatalog {
  loaded ??= fromSnapshot(typeof __VNM_CATALOG__ === "undefined" ? snapshot(loadCatalog()) : __VNM_CATALOG__);
  return loaded;
}
