// The console's catalog, derived at build time from the proto catalog the gateway and the CLI use
// (@vnm/kit) and from the services' resource declarations (the values they store for fields a
// body leaves out). Vite bundles it as the module "virtual:vnm-catalog": a new kind in the proto
// files is a new page of the console, with no console code.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type AnyResource, type Catalog, type FieldInfo, type KindInfo, loadCatalog, references, ResourceSet, type ServiceSpec, templateShape, writableFields } from "@vnm/kit";
import { ROOT, serviceDomains } from "@vnm/kit/repo";
import type { ConsoleCatalog, ConsoleField, ConsoleKind, FieldType, LinkedList } from "./src/model.ts";
import { fieldLabel, inSentence, kindNames, phrase } from "./src/words.ts";

/** A service context no build may use: each member read throws. */
const NO_CONTEXT = new Proxy({} as never, {
  get(_t, member) {
    throw new Error(`the console's build has no service context (${String(member)})`);
  },
});

/**
 * What a service's declaration of a kind says beyond the proto files: what it stores for a field a
 * body leaves out, and how its forms group its fields (the Resource's variants and groups).
 */
interface Declared {
  defaults: Record<string, unknown>;
  variants?: ConsoleKind["variants"];
  groups: ConsoleKind["groups"];
}

/**
 * Each kind's declaration in its service: the services' modules are loaded (nothing runs) and
 * the Resources they declare outright are read (a kind whose Resource its service makes when it
 * starts, a VTEP's or a trace's, or that no Resource serves, has no defaults here). The values a
 * field takes are the proto's (its `string.in` rule, the catalog's `values`).
 */
async function declarations(c: Catalog): Promise<Map<string, Declared>> {
  const resources: AnyResource[] = [];
  for (const d of serviceDomains()) {
    const { service } = (await import(pathToFileURL(join(ROOT, "services", d, "src", "service.ts")).href)) as { service: ServiceSpec };
    // A kind whose Resource is made from the service's context (a function here) is asked for it
    // with a context every use of which throws: one that only keeps the context (the bridges'
    // policy references) gives its Resource; one that uses it at once (a VTEP's) is left out.
    for (const r of service.resources ?? []) {
      if (typeof r !== "function") resources.push(r);
      else {
        try {
          resources.push(r(NO_CONTEXT));
        } catch {
          // made when the service starts: no defaults here
        }
      }
    }
  }
  return new Map(
    new ResourceSet(c, resources).all().map((r) => {
      const { defaults, variants, groups } = r.spec;
      const declared: Declared = { defaults: defaults ?? {}, groups: (groups ?? []).map((g) => ({ title: g.title, fields: [...g.fields] })) };
      if (variants) declared.variants = { field: variants.field, fields: Object.fromEntries(Object.entries(variants.fields).map(([v, fs]) => [v, [...fs]])) };
      return [r.info.kind, declared];
    }),
  );
}

function typeOf(f: FieldInfo): FieldType {
  if (f.jsonObject || f.jsonValue || f.type === "message") return "json";
  if (f.type === "bool") return "boolean";
  if (f.type === "enum") return "enum";
  if (f.type === "double" || f.type === "float") return "number";
  if (/int|fixed/.test(f.type)) return f.type.includes("64") ? "int64" : "integer";
  return "string";
}

function fieldOf(f: FieldInfo, writable: Set<string>, declared: Declared | undefined, ref: string | undefined): ConsoleField {
  const out: ConsoleField = {
    name: f.name,
    label: fieldLabel(f.name),
    type: typeOf(f),
    repeated: f.repeated,
    required: f.behaviors.has("REQUIRED"),
    createOnly: f.behaviors.has("IMMUTABLE"),
    readOnly: !writable.has(f.name),
    writeOnly: f.behaviors.has("INPUT_ONLY"),
    link: f.link !== undefined,
  };
  // A proto enum's values, the values the field's rules allow (`string.in`), or a declaration's.
  const values = f.enumValues ?? f.values;
  if (values) out.enumValues = values;
  if (declared?.defaults[f.name] !== undefined) out.default = declared.defaults[f.name];
  if (ref) out.ref = ref;
  return out;
}

/** The kinds the variables of a kind's create paths name: a variable closing the item path of a kind (routerId in /routers/{routerId}/ports). */
function pathRefsOf(templates: string[], byShape: Map<string, KindInfo>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of templates) {
    const segs = t.split("/");
    segs.forEach((s, i) => {
      const v = /^\{(\w+)\}$/.exec(s)?.[1];
      const target = v ? byShape.get(templateShape(segs.slice(0, i + 1).join("/"))) : undefined;
      if (v && target) out[v] = target.kind;
    });
  }
  return out;
}

/** The columns of a list, the ones that matter first: name, state, tenant, then other plain values. */
function columnsOf(k: KindInfo, fields: ConsoleField[]): string[] {
  const plain = fields.filter((f) => !f.link && !f.writeOnly && !f.repeated && f.type !== "json");
  const first = [
    ...plain.filter((f) => f.name === "name"),
    ...plain.filter((f) => /state|status/i.test(f.name) && !/description/i.test(f.name)),
    ...plain.filter((f) => f.name === k.resource.tenantField),
  ];
  const rest = plain.filter((f) => !first.includes(f) && f.name !== "id");
  const chosen = [...new Set([...first, ...rest])].slice(0, 5).map((f) => f.name);
  return fields.some((f) => f.name === "id") ? [...chosen, "id"] : chosen;
}

/**
 * The field filters a list takes (docs/api.md "Filters", the gateway's rule): every scalar field
 * of its items as the representation shows it (no link, list, write-only, internal or JSON
 * field), unless the request has a field of that name.
 */
function listFilters(route: Catalog["routes"][number]): string[] {
  if (route.shape.kind !== "collection") return [];
  return route.shape.item.fields
    .filter((f) => !f.repeated && f.type !== "message" && !f.link && !f.internal && !f.behaviors.has("INPUT_ONLY") && !f.jsonObject && !f.jsonValue && !route.queryFields.has(f.name))
    .map((f) => f.name);
}

/** The templates of a kind's RPC (every HTTP binding of it). */
const templatesOf = (c: Catalog, k: KindInfo, rpc: string | undefined) => (rpc ? c.routes.filter((r) => r.service === k.service && r.rpc === rpc).map((r) => r.template) : []);

/**
 * Where a kind's items are created: its create RPC's paths, or, for a kind created under one of
 * several parents that are no kind's parent of it (a port, on a router or on a bridge), every
 * POST of its service answering one of its items.
 */
function createTemplatesOf(c: Catalog, k: KindInfo): string[] {
  if (k.rpcs.create) return templatesOf(c, k, k.rpcs.create);
  return c.routes.filter((r) => r.method === "POST" && r.service === k.service && r.shape.kind === "item" && r.shape.item === k.message && r.bodyField?.message === k.message).map((r) => r.template);
}

export async function consoleCatalog(c: Catalog = loadCatalog()): Promise<ConsoleCatalog> {
  const declared = await declarations(c);
  const kinds = [...c.kinds.values()];
  const childrenOf = (kind: string) => kinds.filter((k) => k.parent === kind).map((k) => k.kind);
  const descendants = (kind: string): string[] => childrenOf(kind).flatMap((d) => [d, ...descendants(d)]);
  const byShape = new Map(kinds.map((k) => [templateShape(k.itemTemplate), k]));
  // What a field names, a list of ids included (the kit's references, as the CLI reads them).
  const refOf = references(c);
  const out: ConsoleKind[] = kinds.map((k) => {
    const writable = new Set(writableFields(k.message, "create").map((f) => f.name));
    const fields = k.message.fields.filter((f) => !f.internal).map((f) => fieldOf(f, writable, declared.get(k.kind), refOf(k, f)));
    const listTemplates = templatesOf(c, k, k.rpcs.list);
    const itemShape = templateShape(k.itemTemplate);
    const childLists = new Set(kinds.filter((d) => d.parent === k.kind).flatMap((d) => templatesOf(c, d, d.rpcs.list).map(templateShape)));
    const linkedLists: LinkedList[] = c.routes
      .filter((r) => r.method === "GET" && r.shape.kind === "collection")
      .filter((r) => {
        const shape = templateShape(r.template);
        return shape.startsWith(`${itemShape}/`) && !shape.slice(itemShape.length + 1).includes("/") && !childLists.has(shape);
      })
      .map((r) => {
        const shape = r.shape;
        const of = shape.kind === "collection" ? kinds.find((d) => d.message === shape.item)?.kind : undefined;
        return { title: phrase(r.template.slice(r.template.lastIndexOf("/") + 1)), template: r.template, ...(of ? { kind: of } : {}) };
      });
    const list = c.routes.find((r) => r.service === k.service && r.rpc === k.rpcs.list);
    const names = kindNames(k.resource.displayName);
    return {
      kind: k.kind,
      eventName: k.resource.mediaType.replace(/-v\d+$/, ""),
      singular: names.singular,
      plural: names.plural,
      group: k.resource.rootDocument ?? "",
      adminOnly: k.tenancy === "admin",
      tenantField: k.resource.tenantField,
      parent: k.parent,
      children: childrenOf(k.kind),
      cascades: descendants(k.kind),
      itemTemplate: k.itemTemplate,
      key: [...k.itemTemplate.matchAll(/\{(\w+)\}/g)].at(-1)![1]!,
      listTemplates,
      createTemplates: createTemplatesOf(c, k),
      canUpdate: k.rpcs.update !== undefined,
      canDelete: k.rpcs.delete !== undefined,
      listQuery: list ? [...list.queryFields.keys()] : [],
      filters: list ? listFilters(list) : [],
      fields,
      columns: columnsOf(k, fields),
      nameField: fields.some((f) => f.name === "name") ? "name" : undefined,
      linkedLists,
      pathRefs: pathRefsOf(createTemplatesOf(c, k), byShape),
      ...(declared.get(k.kind)?.variants ? { variants: declared.get(k.kind)!.variants } : {}),
      groups: declared.get(k.kind)?.groups ?? [],
    };
  });
  // A kind of another root document named as one of the main document's is called by its group too
  // ("Compat pools" beside "Pools"): no two kinds read the same in the navigation or a heading.
  for (const k of out) {
    if (k.group === "" || !out.some((o) => o !== k && o.group !== k.group && o.plural === k.plural)) continue;
    const group = phrase(k.group);
    k.singular = `${group} ${inSentence(k.singular)}`;
    k.plural = `${group} ${inSentence(k.plural)}`;
  }
  out.sort((a, b) => a.plural.localeCompare(b.plural));
  return { kinds: out, groups: c.rootDocuments.map((d) => ({ name: d.name, title: phrase(d.name) })) };
}
