// What the proto files declare, read once at start-up: resources, their fields and
// behaviours, and the HTTP routes of the google.api.http bindings. The gateway derives its
// routes and transcoding from it; the services derive their tenancy checks from it.
import { loadReflection } from "./proto.ts";
import protobuf from "protobufjs";

export type Behavior = "REQUIRED" | "OUTPUT_ONLY" | "IMMUTABLE" | "INPUT_ONLY";

export interface FieldInfo {
  name: string;
  /** Scalar type name ("string", "int64", ...) or "message" / "enum". */
  type: string;
  repeated: boolean;
  message?: MessageInfo;
  enumValues?: string[];
  behaviors: Set<Behavior>;
  link?: string;
  internal: boolean;
  /** A list request's tenant filter (?tenant_id=). */
  tenantFilter: boolean;
}

export interface ResourceInfo {
  /** Kind name used by change notifications and the cache: the message name ("Bridge"). */
  kind: string;
  displayName: string;
  mediaType: string;
  collectionMediaType: string;
  rootCollection?: string;
  rootTemplate?: string;
  rootPath?: string;
  /** Field holding the owning tenant, when the kind has one. */
  tenantField?: string;
  adminOnly: boolean;
}

export interface MessageInfo {
  fullName: string;
  name: string;
  fields: FieldInfo[];
  byName: Map<string, FieldInfo>;
  resource?: ResourceInfo;
  /** True when an int64-like field occurs anywhere inside (JSON needs lossless numbers). */
  hasInt64: boolean;
}

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

export type Segment = { literal: string } | { variable: string };

export interface Route {
  method: HttpMethod;
  template: string;
  segments: Segment[];
  /** Full gRPC service name, its domain (vnm.<domain>.v1) and the RPC name. */
  service: string;
  domain: string;
  rpc: string;
  request: MessageInfo;
  response: MessageInfo;
  /** Request field that receives the JSON body. */
  bodyField?: FieldInfo;
  /**
   * Request fields a query parameter may set: on GET only, top-level scalars that no binding
   * of the RPC takes from the path (a VLAN given as ?vlanId= on POST is not a way in).
   */
  queryFields: Map<string, FieldInfo>;
  /** What the response is: one resource, a collection of one, or nothing. */
  shape: { kind: "item"; item: MessageInfo } | { kind: "collection"; field: FieldInfo; item: MessageInfo } | { kind: "empty" };
}

export interface Catalog {
  routes: Route[];
  resources: MessageInfo[];
  /** Full gRPC service names with their domains. */
  services: { name: string; domain: string }[];
  /** "<service>/<rpc>" of the methods callable without a caller identity. */
  publicMethods: Set<string>;
  /**
   * Kinds whose cached collections must go after some changes ("<kind>:<event>", or a bare
   * kind meaning any event): the kind itself; and, when an item was updated or deleted, every
   * kind listed under a path that contains an item of it (a bridge deleted empties the cached
   * lists of its DHCP subnets, which must then answer 404; a bridge given to another tenant
   * hides them). A creation cannot change the lists below the new item.
   */
  affected(changes: Iterable<string>): Set<string>;
}

const INT64 = new Set(["int64", "uint64", "sint64", "fixed64", "sfixed64"]);

function behaviorsOf(field: protobuf.Field): Set<Behavior> {
  const out = new Set<Behavior>();
  const add = (v: unknown) => {
    if (v === "REQUIRED" || v === "OUTPUT_ONLY" || v === "IMMUTABLE" || v === "INPUT_ONLY") out.add(v);
  };
  for (const opt of (field.parsedOptions ?? []) as Record<string, unknown>[]) {
    const v = (opt as Record<string, unknown>)["(google.api.field_behavior)"];
    if (Array.isArray(v)) v.forEach(add);
    else add(v);
  }
  add(field.options?.["(google.api.field_behavior)"]);
  return out;
}

function resourceOf(type: protobuf.Type): ResourceInfo | undefined {
  const opts = type.options ?? {};
  const mediaType = opts["(vnm.api.resource).media_type"] as string | undefined;
  if (!mediaType) return undefined;
  return {
    kind: type.name,
    displayName: (opts["(vnm.api.resource).display_name"] as string | undefined) ?? type.name,
    mediaType,
    collectionMediaType: (opts["(vnm.api.resource).collection_media_type"] as string | undefined) ?? `collection.${mediaType}`,
    rootCollection: opts["(vnm.api.resource).root_collection"] as string | undefined,
    rootTemplate: opts["(vnm.api.resource).root_template"] as string | undefined,
    rootPath: opts["(vnm.api.resource).root_path"] as string | undefined,
    tenantField: (opts["(vnm.api.resource).tenant_field"] as string | undefined) || undefined,
    adminOnly: opts["(vnm.api.resource).admin_only"] === true,
  };
}

export function parseTemplate(template: string): Segment[] {
  if (!template.startsWith("/")) throw new Error(`HTTP path must start with '/': ${template}`);
  return template
    .slice(1)
    .split("/")
    .map((s) => {
      const m = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(s);
      if (m) return { variable: m[1]! };
      if (s.includes("{")) throw new Error(`unsupported path segment ${s} in ${template}`);
      return { literal: s };
    });
}

export function buildCatalog(root: protobuf.Root = loadReflection()): Catalog {
  const messages = new Map<string, MessageInfo>();

  const messageInfo = (type: protobuf.Type): MessageInfo => {
    const known = messages.get(type.fullName);
    if (known) return known;
    const info: MessageInfo = {
      fullName: type.fullName.replace(/^\./, ""),
      name: type.name,
      fields: [],
      byName: new Map(),
      resource: resourceOf(type),
      hasInt64: false,
    };
    messages.set(type.fullName, info);
    for (const f of type.fieldsArray) {
      f.resolve();
      const fi: FieldInfo = {
        name: f.name,
        type: f.resolvedType instanceof protobuf.Type ? "message" : f.resolvedType instanceof protobuf.Enum ? "enum" : f.type,
        repeated: f.repeated,
        behaviors: behaviorsOf(f),
        link: f.options?.["(vnm.api.link)"] as string | undefined,
        internal: f.options?.["(vnm.api.internal)"] === true,
        tenantFilter: f.options?.["(vnm.api.tenant_filter)"] === true,
      };
      if (f.map) throw new Error(`map fields are not supported by the gateway: ${type.fullName}.${f.name}`);
      if (f.resolvedType instanceof protobuf.Type) fi.message = messageInfo(f.resolvedType);
      if (f.resolvedType instanceof protobuf.Enum) fi.enumValues = Object.keys(f.resolvedType.values);
      if (INT64.has(f.type) || fi.message?.hasInt64) info.hasInt64 = true;
      info.fields.push(fi);
      info.byName.set(fi.name, fi);
    }
    return info;
  };

  const routes: Route[] = [];
  const services: { name: string; domain: string }[] = [];
  const publicMethods = new Set<string>();
  const visit = (ns: protobuf.NamespaceBase) => {
    for (const obj of ns.nestedArray) {
      if (obj instanceof protobuf.Service) {
        const name = obj.fullName.replace(/^\./, "");
        if (!name.startsWith("vnm.")) continue; // e.g. grpc.health.v1.Health
        const domain = /^vnm\.([a-z0-9_]+)\./.exec(name)?.[1];
        if (!domain) throw new Error(`service ${name} is not in a vnm.<domain> package`);
        services.push({ name, domain });
        for (const m of obj.methodsArray) {
          if (m.options?.["(vnm.api.public)"] === true) publicMethods.add(`${name}/${m.name}`);
          routes.push(...methodRoutes(name, domain, m));
        }
      } else if (obj instanceof protobuf.Namespace || obj instanceof protobuf.Type) {
        visit(obj);
      }
    }
  };

  const methodRoutes = (service: string, domain: string, m: protobuf.Method): Route[] => {
    m.resolve();
    const rule = ((m.parsedOptions ?? []) as Record<string, unknown>[])
      .map((o) => o["(google.api.http)"])
      .find((v) => v !== undefined) as Record<string, unknown> | undefined;
    if (!rule) return [];
    const request = messageInfo(m.resolvedRequestType!);
    const response = messageInfo(m.resolvedResponseType!);
    // A single additional_bindings entry arrives as an object, several as an array.
    const extra = rule["additional_bindings"];
    const bindings = [rule, ...(Array.isArray(extra) ? extra : extra ? [extra] : [])] as Record<string, unknown>[];
    const pathVariables = new Set<string>();
    for (const b of bindings) {
      for (const k of ["get", "post", "put", "delete"]) {
        if (typeof b[k] === "string") for (const m of (b[k] as string).matchAll(/\{([^}]+)\}/g)) pathVariables.add(m[1]!);
      }
    }
    return bindings.map((b) => {
      const method = (["get", "post", "put", "delete"] as const).find((k) => typeof b[k] === "string");
      if (!method) throw new Error(`${service}/${m.name}: binding without get/post/put/delete`);
      const template = b[method] as string;
      const bodyName = b["body"] as string | undefined;
      const bodyField = bodyName ? request.byName.get(bodyName) : undefined;
      if (bodyName && bodyField?.type !== "message") {
        throw new Error(`${service}/${m.name}: body "${bodyName}" must name a message field`);
      }
      const segments = parseTemplate(template);
      for (const s of segments) {
        if ("variable" in s && !request.byName.has(s.variable)) {
          throw new Error(`${service}/${m.name}: path variable {${s.variable}} is not a request field`);
        }
      }
      return {
        method: method.toUpperCase() as HttpMethod,
        template,
        segments,
        service,
        domain,
        rpc: m.name,
        request,
        response,
        bodyField,
        queryFields: new Map(
          method === "get"
            ? request.fields
                .filter((f) => !pathVariables.has(f.name) && !f.repeated && f.type !== "message")
                .map((f) => [f.name, f] as const)
            : [],
        ),
        shape: shapeOf(response),
      };
    });
  };

  visit(root);
  const resources = [...messages.values()].filter((m) => m.resource);
  // Most literal segments first, so /x/literal wins over /x/{var}.
  routes.sort(
    (a, b) =>
      b.segments.filter((s) => "literal" in s).length - a.segments.filter((s) => "literal" in s).length,
  );
  const dependents = new Map<string, Set<string>>();
  for (const r of routes) {
    if (r.shape.kind !== "collection") continue;
    const listed = r.shape.item.resource!.kind;
    const segs = templateShape(r.template).split("/");
    for (let n = segs.length - 1; n > 1; n--) {
      const parent = routes.find((x) => x.method === "GET" && x.shape.kind === "item" && templateShape(x.template) === segs.slice(0, n).join("/"));
      if (parent?.shape.kind !== "item") continue;
      const kind = parent.shape.item.resource!.kind;
      if (!dependents.has(kind)) dependents.set(kind, new Set());
      dependents.get(kind)!.add(listed);
    }
  }
  const affected = (changes: Iterable<string>) => {
    const out = new Set<string>();
    for (const change of changes) {
      const [kind, event] = change.split(":") as [string, string | undefined];
      out.add(kind);
      if (event !== "created") for (const d of dependents.get(kind) ?? []) out.add(d);
    }
    return out;
  };
  return { routes, resources, services, publicMethods, affected };
}

function shapeOf(response: MessageInfo): Route["shape"] {
  if (response.resource) return { kind: "item", item: response };
  const repeated = response.fields.filter((f) => f.repeated && f.message?.resource);
  // A collection: one repeated resource field, and at most the paging marker beside it.
  if (repeated.length === 1 && response.fields.every((f) => f === repeated[0] || f.name === "next_marker")) {
    return { kind: "collection", field: repeated[0]!, item: repeated[0]!.message! };
  }
  if (response.fields.length === 0) return { kind: "empty" };
  throw new Error(`${response.fullName} is neither a resource, a collection of one, nor empty`);
}

/** A template with its variable names blanked: "/bridges/{}/dhcp". */
export function templateShape(template: string): string {
  return template.replace(/\{[^}]*\}/g, "{}");
}

