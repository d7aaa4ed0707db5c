// What the proto files declare, read once at start-up: resources, their fields and
// behaviours, and the HTTP routes of the google.api.http bindings. The gateway derives its
// routes and transcoding from it; the services derive their tenancy checks from it.
import { countedKinds, QUOTA_KIND, USAGE_SERVICE } from "./quota-kinds.ts";
import type { DescField, DescMessage, DescMethod, FileRegistry } from "@bufbuild/protobuf";
import { fieldRulesJson, loadDescriptors, scalarName, stringRules } from "./descriptors.ts";
import { linkFields, parseTemplate, type Segment, templateShape } from "./paths.ts";
import { PROTO_DIR } from "./proto.ts";
import { Declarations } from "./reflect.ts";

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
  /** A string holding a client's free-form JSON object (vnm.api.json_object). */
  jsonObject: boolean;
  /** A string holding any JSON value of a client's but null (vnm.api.json_value). */
  jsonValue: boolean;
  /** A string field (or each item of a repeated one) holding a UUID (vnm.api.uuid). */
  uuid: boolean;
  /** The only values a string field takes, spelled exactly (vnm.api.values); undefined when open. */
  values?: string[];
  /**
   * The field's rules as the proto states them (`buf.validate.field`, in protobuf's JSON form with
   * proto field names: `{string: {max_len: 255, uuid: true}}`; vnm's own rules as `[vnm.api.mac]`).
   */
  rules?: Record<string, unknown>;
  /** The field's proto comment, when it has one. */
  comment?: string;
}

export interface ResourceInfo {
  /**
   * Kind name used by the cache, /events and the changes a call names: the message name
   * qualified by its domain ("bridge.Bridge"), so two services may each own a "Port".
   */
  kind: string;
  /** The domain of the package (vnm.<domain>.v1) and the message name ("Bridge"). */
  domain: string;
  name: string;
  displayName: string;
  mediaType: string;
  collectionMediaType: string;
  rootCollection?: string;
  rootTemplate?: string;
  rootPath?: string;
  /** Field holding the owning tenant, when the kind has one. */
  tenantField?: string;
  adminOnly: boolean;
  /** The root document listing it (a RootDocumentInfo's name); undefined for the main one. */
  rootDocument?: string;
  /**
   * Other vendor names of the same item and of its collection (vnm.api.Resource
   * alias_media_types), in the order declared: accepted and offered beside the main ones.
   */
  aliasMediaTypes: string[];
  aliasCollectionMediaTypes: string[];
}

/** A root document besides the main one (vnm.api.root_document on a message). */
export interface RootDocumentInfo {
  name: string;
  path: string;
  mediaType: string;
}

export interface MessageInfo {
  fullName: string;
  name: string;
  fields: FieldInfo[];
  byName: Map<string, FieldInfo>;
  resource?: ResourceInfo;
  /** True when an int64-like or free-form JSON field occurs anywhere inside (JSON needs lossless numbers). */
  hasInt64: boolean;
  /** The message's proto comment, when it has one. */
  comment?: string;
}

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

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
  /** The RPC's proto comment, when it has one (its first sentence says what it does). */
  comment?: string;
  /** What the response is: one resource, a collection of one, or nothing. */
  shape: { kind: "item"; item: MessageInfo } | { kind: "collection"; field: FieldInfo; item: MessageInfo } | { kind: "empty" };
}

/** An item GET route: what names one resource. */
export type ItemRoute = Route & { shape: { kind: "item"; item: MessageInfo } };

/**
 * The resource tree of the routes, worked out once: what is served at a template shape, and the
 * items above a template (its owner chain), which tenancy, probes, the kinds' parents and the
 * cache's dependents all read.
 */
export interface ResourceTree {
  /** The GET route at a template shape ("/bridges/{}/dhcp"), if any. */
  getAt(shape: string): Route | undefined;
  /**
   * The GET routes at the paths above a template, nearest first; with `self`, the template's
   * own path first (for a route that names an existing item).
   */
  above(template: string, self: boolean): Route[];
  /** The item GET routes among those: the owner chain. */
  itemsAbove(template: string, self: boolean): ItemRoute[];
}

function resourceTree(routes: Route[]): ResourceTree {
  const gets = new Map<string, Route>();
  for (const r of routes) {
    const shape = templateShape(r.template);
    if (r.method === "GET" && !gets.has(shape)) gets.set(shape, r);
  }
  const getAt = (shape: string) => gets.get(shape);
  const above = (template: string, self: boolean) => {
    const segs = templateShape(template).split("/");
    const out: Route[] = [];
    for (let n = self ? segs.length : segs.length - 1; n > 1; n--) {
      const r = getAt(segs.slice(0, n).join("/"));
      if (r) out.push(r);
    }
    return out;
  };
  return { getAt, above, itemsAbove: (template, self) => above(template, self).filter((r): r is ItemRoute => r.shape.kind === "item") };
}

/** What a kind's own endpoints do; the RPCs serving them are found from the HTTP bindings. */
export type Verb = "list" | "get" | "create" | "update" | "delete";

/**
 * A kind as the proto files declare it: its own RPCs (at its item path and the collection path
 * above it), the kind it lives under (the nearest item path above its own), and its tenant
 * rule: its own tenant field, its parent's, or none (administrators only).
 */
export interface KindInfo {
  kind: string;
  message: MessageInfo;
  resource: ResourceInfo;
  /** Full gRPC service name of its own RPCs. */
  service: string;
  rpcs: Partial<Record<Verb, string>>;
  /** The request field receiving the body of its create and update. */
  body?: string;
  /** Route template of one item, e.g. "/bridges/{bridgeId}/dhcp/{subnetAddr}". */
  itemTemplate: string;
  /** The kind it lives under, when its item path is below another kind's. */
  parent?: string;
  tenancy: "own" | "parent" | "admin";
}

export interface Catalog {
  routes: Route[];
  tree: ResourceTree;
  resources: MessageInfo[];
  /** Kinds with an item GET route, by qualified kind name. */
  kinds: Map<string, KindInfo>;
  /** The kind of a resource message, by its full name ("vnm.bridge.v1.DhcpSubnet"). */
  kindOf(fullName: string): KindInfo;
  /** Full gRPC service names with their domains (and the service's proto comment). */
  services: { name: string; domain: string; comment?: string }[];
  /** Root documents besides the main one. */
  rootDocuments: RootDocumentInfo[];
  /** "<service>/<rpc>" of the methods callable without a caller identity. */
  publicMethods: Set<string>;
  /**
   * The parts that call a method as themselves (vnm.api.callers), by "<service>/<rpc>": part
   * names, or EVERY_PART. A method absent here is called by no part with its own token.
   */
  callers: Map<string, ReadonlySet<string>>;
  /**
   * Paths that links lead to but no route serves: kinds this interface only references (a
   * bridge's filter chains, a load balancer's router).
   */
  unserved: Segment[][];
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


const BEHAVIORS = new Set<string>(["REQUIRED", "OUTPUT_ONLY", "IMMUTABLE", "INPUT_ONLY"]);

/** The domain of a vnm.<domain>.v1 package member; undefined outside vnm. */
export function domainOf(fullName: string): string | undefined {
  return /^\.?vnm\.([a-z0-9_]+)\.v\d+\./.exec(fullName)?.[1];
}

/** vnm.api.Resource as protobuf-es reads it (field names in lowerCamelCase). */
interface ResourceOption {
  mediaType: string;
  collectionMediaType: string;
  rootCollection: string;
  rootTemplate: string;
  rootPath: string;
  displayName: string;
  tenantField: string;
  adminOnly: boolean;
  rootDocument: string;
  aliasMediaTypes: string[];
}

/** google.api.HttpRule as protobuf-es reads it. */
interface HttpRule {
  pattern: { case: string | undefined; value?: unknown };
  body: string;
  additionalBindings: HttpRule[];
}

/** Reads field and message declarations into MessageInfo, once per message. */
class Messages {
  readonly all = new Map<string, MessageInfo>();
  readonly decl: Declarations;
  private readonly behaviorNames: Map<number, string>;

  constructor(decl: Declarations) {
    this.decl = decl;
    this.behaviorNames = new Map(decl.registry.getEnum("google.api.FieldBehavior")?.values.map((v) => [v.number, v.name]) ?? []);
  }

  get(type: DescMessage): MessageInfo {
    const known = this.all.get(type.typeName);
    if (known) return known;
    const info: MessageInfo = {
      fullName: type.typeName,
      name: type.name,
      fields: [],
      byName: new Map(),
      resource: this.resourceOf(type),
      hasInt64: false,
      comment: this.decl.comment(type),
    };
    this.all.set(type.typeName, info);
    for (const f of type.fields) {
      const fi = this.field(type, f);
      if (INT64.has(fi.type) || fi.jsonObject || fi.jsonValue || fi.message?.hasInt64) info.hasInt64 = true;
      info.fields.push(fi);
      info.byName.set(fi.name, fi);
    }
    return info;
  }

  private resourceOf(type: DescMessage): ResourceInfo | undefined {
    const r = this.decl.option<ResourceOption>(type, "vnm.api.resource");
    if (!r?.mediaType) return undefined;
    const domain = domainOf(type.typeName);
    if (!domain) throw new Error(`resource ${type.typeName} is not in a vnm.<domain>.v<N> package`);
    return {
      kind: `${domain}.${type.name}`,
      domain,
      name: type.name,
      displayName: r.displayName || type.name,
      mediaType: r.mediaType,
      collectionMediaType: r.collectionMediaType || `collection.${r.mediaType}`,
      rootCollection: r.rootCollection || undefined,
      rootTemplate: r.rootTemplate || undefined,
      rootPath: r.rootPath || undefined,
      tenantField: r.tenantField || undefined,
      adminOnly: r.adminOnly,
      rootDocument: r.rootDocument || undefined,
      aliasMediaTypes: [...(r.aliasMediaTypes ?? [])],
      aliasCollectionMediaTypes: (r.aliasMediaTypes ?? []).map((t) => `collection.${t}`),
    };
  }

  private behaviorsOf(f: DescField): Set<Behavior> {
    const names = (this.decl.option<number[]>(f, "google.api.field_behavior") ?? []).map((n) => this.behaviorNames.get(n) ?? "");
    return new Set(names.filter((n): n is Behavior => BEHAVIORS.has(n)));
  }

  private field(type: DescMessage, f: DescField): FieldInfo {
    const where = `${type.typeName}.${f.name}`;
    if (f.fieldKind === "map") throw new Error(`map fields are not supported by the gateway: ${where}`);
    const kind = f.fieldKind === "list" ? f.listKind : f.fieldKind;
    const scalar = f.fieldKind === "list" ? f.scalar : f.fieldKind === "scalar" ? f.scalar : undefined;
    const message = f.fieldKind === "list" ? f.message : f.fieldKind === "message" ? f.message : undefined;
    const enumType = f.fieldKind === "list" ? f.enum : f.fieldKind === "enum" ? f.enum : undefined;
    const opt = <T>(name: string) => this.decl.option<T>(f, name);
    const values = opt<string[]>("vnm.api.values");
    const fi: FieldInfo = {
      name: f.name,
      type: kind === "scalar" ? scalarName(scalar!)! : kind,
      repeated: f.fieldKind === "list",
      behaviors: this.behaviorsOf(f),
      link: opt<string>("vnm.api.link") || undefined,
      internal: opt<boolean>("vnm.api.internal") === true,
      tenantFilter: opt<boolean>("vnm.api.tenant_filter") === true,
      jsonObject: opt<boolean>("vnm.api.json_object") === true,
      jsonValue: opt<boolean>("vnm.api.json_value") === true,
      uuid: opt<boolean>("vnm.api.uuid") === true,
      values: values && values.length > 0 ? values : undefined,
      comment: this.decl.comment(f),
    };
    const rules = fieldRulesJson(this.decl.registry, f);
    if (rules) {
      fi.rules = rules;
      // A string's (or each item's) format and allowed values, as the gateway and the OpenAPI document use them.
      const str = stringRules(f);
      if (str?.wellKnown.case === "uuid" && str.wellKnown.value) fi.uuid = true;
      if (str && str.in.length > 0) fi.values = str.in;
    }
    if (fi.uuid && fi.type !== "string") throw new Error(`${where}: vnm.api.uuid is for string fields`);
    if (fi.values && fi.type !== "string") throw new Error(`${where}: vnm.api.values is for string fields`);
    if ((fi.jsonObject || fi.jsonValue) && (fi.type !== "string" || fi.repeated)) throw new Error(`${where}: a JSON field must be a single string field`);
    if (message) fi.message = this.get(message);
    if (enumType) fi.enumValues = enumType.values.map((v) => v.name);
    return fi;
  }
}

const METHODS = ["get", "post", "put", "delete"] as const;
const VERBS: Record<(typeof METHODS)[number], HttpMethod> = { get: "GET", post: "POST", put: "PUT", delete: "DELETE" };

/** The bindings of a method: its google.api.http rule and the additional bindings. */
function bindingsOf(decl: Declarations, m: DescMethod): HttpRule[] {
  const rule = decl.option<HttpRule>(m, "google.api.http");
  return rule ? [rule, ...rule.additionalBindings] : [];
}

/** The routes of one RPC, one per binding. */
function methodRoutes(messages: Messages, service: string, domain: string, m: DescMethod): Route[] {
  const bindings = bindingsOf(messages.decl, m);
  if (bindings.length === 0) return [];
  const request = messages.get(m.input);
  const response = messages.get(m.output);
  const where = `${service}/${m.name}`;
  const templates = bindings.map((b) => {
    const method = METHODS.find((k) => b.pattern.case === k);
    if (!method) throw new Error(`${where}: binding without get/post/put/delete`);
    return { method, template: String(b.pattern.value), body: b.body || undefined };
  });
  const pathVariables = new Set(templates.flatMap((t) => linkFields(t.template)));
  const comment = messages.decl.comment(m);
  return templates.map(({ method, template, body }) => {
    const bodyField = body ? request.byName.get(body) : undefined;
    if (body && bodyField?.type !== "message") throw new Error(`${where}: body "${body}" must name a message field`);
    const segments = parseTemplate(template);
    for (const s of segments) {
      if ("variable" in s && !request.byName.has(s.variable)) throw new Error(`${where}: path variable {${s.variable}} is not a request field`);
    }
    const queryFields = new Map(
      method === "get"
        ? request.fields.filter((f) => !pathVariables.has(f.name) && !f.repeated && f.type !== "message").map((f) => [f.name, f] as const)
        : [],
    );
    const verb = VERBS[method];
    return { method: verb, template, segments, service, domain, rpc: m.name, request, response, bodyField, queryFields, comment, shape: shapeOf(response) };
  });
}

/** The files of vnm's own packages (vnm.<domain>.v1, vnm.api), in the registry's order. */
const vnmFiles = (registry: FileRegistry) => [...registry.files].filter((f) => f.proto.package.startsWith("vnm."));

/** Every message of a file, nested ones too. */
function messagesOf(messages: readonly DescMessage[]): DescMessage[] {
  return messages.flatMap((m) => [m, ...messagesOf(m.nestedMessages)]);
}

/** The root documents declared on messages (vnm.api.root_document). */
function readRootDocuments(decl: Declarations): RootDocumentInfo[] {
  const out: RootDocumentInfo[] = [];
  for (const file of vnmFiles(decl.registry)) {
    for (const m of messagesOf(file.messages)) {
      const d = decl.option<{ name: string; path: string; mediaType: string }>(m, "vnm.api.root_document");
      if (d?.name) out.push({ name: d.name, path: d.path, mediaType: d.mediaType });
    }
  }
  return out;
}

/** Every vnm service of the registry with its routes. */
function readServices(messages: Messages) {
  const { decl } = messages;
  const routes: Route[] = [];
  const services: Catalog["services"] = [];
  const publicMethods = new Set<string>();
  const callers = new Map<string, ReadonlySet<string>>();
  for (const file of vnmFiles(decl.registry)) {
    for (const svc of file.services) {
      const name = svc.typeName;
      const domain = domainOf(name);
      if (!domain) throw new Error(`service ${name} is not in a vnm.<domain>.v<N> package`);
      services.push({ name, domain, comment: decl.comment(svc) });
      for (const m of svc.methods) {
        if (decl.option<boolean>(m, "vnm.api.public") === true) publicMethods.add(`${name}/${m.name}`);
        const named = decl.option<string[]>(m, "vnm.api.callers");
        if (named && named.length > 0) callers.set(`${name}/${m.name}`, new Set(named));
        routes.push(...methodRoutes(messages, name, domain, m));
      }
    }
  }
  // Most literal segments first, so /x/literal wins over /x/{var}.
  const literals = (r: Route) => r.segments.filter((s) => "literal" in s).length;
  routes.sort((a, b) => literals(b) - literals(a));
  checkCallers(callers, services);
  return { routes, services, publicMethods, callers };
}

/** Names every part, in vnm.api.callers. */
export const EVERY_PART = "*";

/** Every name in vnm.api.callers is a part (the gateway or a domain of these services), or EVERY_PART. */
function checkCallers(callers: Map<string, ReadonlySet<string>>, services: Catalog["services"]): void {
  const parts = new Set(["gateway", EVERY_PART, ...services.map((s) => s.domain)]);
  for (const [method, names] of callers) {
    for (const n of names) if (!parts.has(n)) throw new Error(`${method}: vnm.api.callers names "${n}", which is no part (the gateway, a domain or "${EVERY_PART}")`);
  }
}

/**
 * The domains `part` calls as itself: those with a method naming it (or every part) among its
 * callers, itself aside; a method of the service every domain serves (USAGE_SERVICE, the
 * quota service's usage count) is that of every domain holding a kind quotas count (the quota
 * service asks no other). The call graph the network policies admit (deploy/k8s/network.ts).
 */
export function peersOf(catalog: Pick<Catalog, "callers" | "services" | "kinds">, part: string): string[] {
  const domainOf = new Map(catalog.services.map((s) => [s.name, s.domain]));
  const counting = [...new Set(countedKinds(catalog).map((c) => c.domain))];
  const out = new Set<string>();
  for (const [method, names] of catalog.callers) {
    const service = method.slice(0, method.indexOf("/"));
    if (!names.has(part) && !names.has(EVERY_PART)) continue;
    for (const domain of service === USAGE_SERVICE ? counting : [domainOf.get(service)!]) if (domain !== part) out.add(domain);
  }
  return [...out].sort();
}

/** The kinds: each resource with an item GET route, its own RPCs, parent and tenant rule. */
function readKinds(routes: Route[], tree: ResourceTree): Map<string, KindInfo> {
  const kinds = new Map<string, KindInfo>();
  for (const get of routes) {
    if (get.method !== "GET" || get.shape.kind !== "item") continue;
    const item = get.shape.item;
    const resource = item.resource!;
    if (kinds.has(resource.kind)) continue;
    const shape = templateShape(get.template);
    const above = shape.slice(0, shape.lastIndexOf("/"));
    const own = (r: Route, at: string) => r.service === get.service && templateShape(r.template) === at;
    const rpc = (method: HttpMethod, at: string) => routes.find((r) => r.method === method && own(r, at))?.rpc;
    // Its list and create are at the path above its items; a kind whose items live elsewhere
    // (a route at /routes/{id}, created under /routers/{id}/routes) has them where the only ones are.
    const lists = routes.filter((r) => r.method === "GET" && r.shape.kind === "collection" && r.shape.item === item && r.service === get.service);
    const creates = routes.filter((r) => r.method === "POST" && r.shape.kind === "item" && r.shape.item === item && r.service === get.service);
    const list = lists.find((r) => own(r, above)) ?? (lists.length === 1 ? lists[0] : undefined);
    const create = creates.find((r) => own(r, above)) ?? (creates.length === 1 ? creates[0] : undefined);
    const parent = tree.itemsAbove(get.template, false)[0]?.shape.item.resource?.kind;
    kinds.set(resource.kind, {
      kind: resource.kind,
      message: item,
      resource,
      service: get.service,
      rpcs: { get: get.rpc, list: list?.rpc, create: create?.rpc, update: rpc("PUT", shape), delete: rpc("DELETE", shape) },
      body: create?.bodyField?.name ?? routes.find((r) => r.method === "PUT" && own(r, shape))?.bodyField?.name,
      itemTemplate: get.template,
      parent,
      tenancy: "admin",
    });
  }
  for (const k of kinds.values()) k.tenancy = tenancyOf(kinds, k);
  return kinds;
}

function tenancyOf(kinds: Map<string, KindInfo>, k: KindInfo): KindInfo["tenancy"] {
  if (k.resource.adminOnly) return "admin";
  if (k.resource.tenantField) return "own";
  for (let p = k.parent ? kinds.get(k.parent) : undefined; p; p = p.parent ? kinds.get(p.parent) : undefined) {
    if (p.resource.tenantField) return "parent";
  }
  return "admin";
}

/** Link templates (not client templates) that lead where no route serves. */
function unservedLinks(resources: MessageInfo[], routes: Route[]): Segment[][] {
  const served = new Set(routes.map((r) => templateShape(r.template)));
  const out = new Map<string, Segment[]>();
  for (const m of resources) {
    for (const f of m.fields) {
      const t = f.link;
      // Links the gateway resolves (every placeholder names a field), not client templates.
      if (!t || t.startsWith("{") || !linkFields(t).every((p) => m.byName.has(p))) continue;
      const shape = templateShape(t);
      if (!served.has(shape) && !out.has(shape)) out.set(shape, parseTemplate(shape.replace(/\{\}/g, "{v}")));
    }
  }
  return [...out.values()];
}

/** The kinds whose cached lists hold items below each kind's items (see Catalog.affected). */
function dependentsOf(routes: Route[], tree: ResourceTree): (changes: Iterable<string>) => Set<string> {
  const dependents = new Map<string, Set<string>>();
  for (const r of routes) {
    if (r.shape.kind !== "collection") continue;
    const listed = r.shape.item.resource!.kind;
    for (const parent of tree.itemsAbove(r.template, false)) {
      const kind = parent.shape.item.resource!.kind;
      if (!dependents.has(kind)) dependents.set(kind, new Set());
      dependents.get(kind)!.add(listed);
    }
  }
  return (changes) => {
    const out = new Set<string>();
    for (const change of changes) {
      const at = change.lastIndexOf(":");
      const [kind, event] = at < 0 ? [change, undefined] : [change.slice(0, at), change.slice(at + 1)];
      out.add(kind);
      if (event !== "created") for (const d of dependents.get(kind) ?? []) out.add(d);
    }
    return out;
  };
}

/** Also the quotas (QUOTA_KIND) after any change of a kind they count: their usage changed. */
function withUsage(kinds: Map<string, KindInfo>, affected: (changes: Iterable<string>) => Set<string>): (changes: Iterable<string>) => Set<string> {
  if (!kinds.has(QUOTA_KIND)) return affected;
  const counted = new Set(countedKinds({ kinds }).map((c) => c.kind));
  return (changes) => {
    const out = affected(changes);
    for (const kind of [...out]) if (counted.has(kind)) out.add(QUOTA_KIND);
    return out;
  };
}

/**
 * The catalog of a descriptor set (the repository's proto/contract.binpb when none is given): what
 * every part derives its routes, kinds, tenancy and checks from.
 */
export function buildCatalog(registry: FileRegistry = loadDescriptors(PROTO_DIR)): Catalog {
  const decl = new Declarations(registry);
  const messages = new Messages(decl);
  const { routes, services, publicMethods, callers } = readServices(messages);
  const resources = [...messages.all.values()].filter((m) => m.resource);
  const tree = resourceTree(routes);
  const kinds = readKinds(routes, tree);
  const byMessage = new Map([...kinds.values()].map((k) => [k.message.fullName, k]));
  const kindOf = (fullName: string) => {
    const k = byMessage.get(fullName);
    if (!k) throw new Error(`${fullName} is not a resource with an item GET route in the proto files`);
    return k;
  };
  const rootDocuments = readRootDocuments(decl);
  for (const m of resources) {
    const doc = m.resource!.rootDocument;
    if (doc && !rootDocuments.some((d) => d.name === doc)) throw new Error(`${m.fullName}: no root document named ${doc}`);
  }
  return { routes, tree, resources, kinds, kindOf, services, rootDocuments, publicMethods, callers, unserved: unservedLinks(resources, routes), affected: withUsage(kinds, dependentsOf(routes, tree)) };
}

/**
 * The fields a client may send: on create every one but the read-only ones (OUTPUT_ONLY, links,
 * internal ones); on update not the create-only (IMMUTABLE) ones either.
 */
export function writableFields(m: MessageInfo, mode: "create" | "update"): FieldInfo[] {
  return m.fields.filter((f) => !f.internal && !f.link && !f.behaviors.has("OUTPUT_ONLY") && (mode === "create" || !f.behaviors.has("IMMUTABLE")));
}

/**
 * The catalog of the proto files in `dir`. Each part loads it once when it starts and hands it
 * to what needs it (a process running several parts loads it once for all).
 */
export function loadCatalog(dir = PROTO_DIR): Catalog {
  return buildCatalog(loadDescriptors(dir));
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
