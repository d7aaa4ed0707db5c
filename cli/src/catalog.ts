// The part of the kit's catalog the CLI uses, as plain data: each kind (its RPCs, item path,
// parent, fields and resource options) and the routes of those RPCs. build.mjs takes it from
// the kit's catalog when it builds (src/snapshot.ts) and puts it into the bundle, so the bin
// reads no proto file and does not rebuild the catalog each time it starts; run from the
// sources (the unit tests), it is taken from the proto files the same way.
import type { Catalog, FieldInfo, KindInfo, ResourceInfo, Route } from "@vnm/kit";
import { loadCatalog, writableFields } from "@vnm/kit";

export type Field = Pick<FieldInfo, "name" | "type" | "repeated" | "behaviors" | "link" | "internal" | "jsonObject" | "jsonValue">;

export interface CliKind extends Pick<KindInfo, "kind" | "service" | "rpcs" | "itemTemplate" | "parent"> {
  message: { name: string; fields: Field[]; byName: Map<string, Field> };
  resource: Pick<ResourceInfo, "displayName" | "mediaType" | "tenantField">;
  /** The fields a create and an update may send, as the kit defines them (writableFields). */
  writable: { create: string[]; update: string[] };
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

export function snapshot(c: Catalog): Snapshot {
  const kinds = [...c.kinds.values()];
  const used = (r: Route) => kinds.some((k) => k.service === r.service && Object.values(k.rpcs).includes(r.rpc));
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
        })),
      },
      resource: { displayName: k.resource.displayName, mediaType: k.resource.mediaType, tenantField: k.resource.tenantField },
      writable: { create: writableFields(k.message, "create").map((f) => f.name), update: writableFields(k.message, "update").map((f) => f.name) },
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
