// Tenancy, derived from the proto declarations for every RPC with an HTTP binding. A service
// declares only which field holds the tenant (vnm.api.resource tenant_field); the rules of
// docs/api.md, "Tenancy", follow from the catalog:
// - admins pass; a POST without a tenant takes the admin's project, if any;
// - kinds without a tenant field and without a tenant-bearing parent, and admin_only kinds,
//   are refused to everyone else (403);
// - tenant users may only read (403 for any write);
// - an item of another tenant, or under a parent of another tenant, is not found (404);
// - a POST/PUT without a tenant takes the caller's; naming another tenant is a 403;
// - lists are narrowed to the caller's tenant (a filter naming another tenant lists nothing).
import type { Identity } from "./auth.ts";
import type { Catalog, HttpMethod, ResourceInfo } from "./catalog.ts";
import { sharedVariables, templateShape } from "./paths.ts";
import { ApiError } from "./errors.ts";
import { isRecord, memberOf } from "./values.ts";

export interface Access {
  verb: HttpMethod;
  shape: "item" | "collection" | "empty";
  resource?: ResourceInfo;
  bodyField?: string;
  collectionField?: string;
  tenantFilterField?: string;
  /** Where the tenant of an existing target is read: the item itself or its nearest parent. */
  owner?: {
    service: string;
    rpc: string;
    self: boolean;
    tenantField: string;
    displayName: string;
    /** [owner request field, this request field] by path position. */
    params: [string, string][];
  };
  adminOnly: boolean;
}

/** Access rules per "<service>/<rpc>", from each RPC's first HTTP binding. */
export function accessRules(catalog: Catalog): Map<string, Access> {
  const rules = new Map<string, Access>();
  for (const route of catalog.routes) {
    const key = `${route.service}/${route.rpc}`;
    if (rules.has(key)) continue;
    // An empty answer (a DELETE) names the item at its own path.
    const own = route.shape.kind === "empty" ? catalog.tree.getAt(templateShape(route.template)) : undefined;
    const resource = route.shape.kind === "empty" ? (own?.shape.kind === "item" ? own.shape : undefined) : route.shape;
    const res = resource?.item.resource;
    // The owner: the nearest item at or above the target (above only, for a create) with a tenant.
    const chain = catalog.tree.itemsAbove(route.template, route.method !== "POST");
    const candidate = chain.find((c) => c.shape.item.resource?.tenantField);
    const cres = candidate?.shape.item.resource;
    const owner: Access["owner"] =
      candidate && cres?.tenantField
        ? {
            service: candidate.service,
            rpc: candidate.rpc,
            self: templateShape(candidate.template) === templateShape(route.template),
            tenantField: cres.tenantField,
            displayName: cres.displayName,
            params: sharedVariables(candidate.segments, route.segments),
          }
        : undefined;
    const tenantBearing = Boolean(res?.tenantField) || Boolean(owner);
    rules.set(key, {
      verb: route.method,
      shape: route.shape.kind,
      resource: res,
      bodyField: route.bodyField?.name,
      collectionField: route.shape.kind === "collection" ? route.shape.field.name : undefined,
      tenantFilterField: route.request.fields.find((f) => f.tenantFilter)?.name,
      owner,
      adminOnly: Boolean(res?.adminOnly) || !tenantBearing,
    });
  }
  return rules;
}

/** The refusals that need no data: 403 for admin-only kinds and for tenant users' writes. */
export function coarseDenial(access: Access, who: Identity): ApiError | undefined {
  if (who.role === "admin") return undefined;
  if (access.adminOnly) return ApiError.forbidden("Only administrators may use this resource");
  if (who.role === "tenant_user" && access.verb !== "GET") {
    return ApiError.forbidden("Tenant users may only read");
  }
  return undefined;
}

type Obj = Record<string, unknown>;

/**
 * Whether `who` may see an item of tenant `tenantId`, as withTenancy decides for an item read: an
 * administrator sees every item, a call with no caller is a service's own and sees them too, and
 * anyone else only the items of its own tenant (a tenantless item is no one's but the
 * administrators', and a caller without a tenant sees none).
 */
export function maySee(who: Identity | undefined, tenantId: unknown): boolean {
  return !who || who.role === "admin" || (typeof who.tenantId === "string" && who.tenantId === tenantId);
}

/**
 * Runs `run` for `who` under the tenancy rules. `readOwner` calls the service's own GET
 * handler for the owner of the target (it throws NOT_FOUND for a missing one).
 */
export async function withTenancy(
  access: Access,
  who: Identity,
  request: Obj,
  readOwner: (service: string, rpc: string, request: Obj) => Promise<Obj>,
  run: () => Promise<unknown>,
): Promise<unknown> {
  const tf = access.resource?.tenantField;
  const sent = access.bodyField ? (request[access.bodyField] ?? {}) : undefined;
  if (sent !== undefined && !isRecord(sent)) throw ApiError.badRequest("The body must be a JSON object");
  const body = sent;
  if (access.bodyField && body) request[access.bodyField] = body;

  if (who.role === "admin") {
    if (access.verb === "POST" && body && tf && body[tf] === undefined && who.tenantId !== null) body[tf] = who.tenantId;
    return run();
  }
  const denied = coarseDenial(access, who);
  if (denied) throw denied;
  const tenant = who.tenantId;
  const owner = access.owner;
  if (owner) {
    const ownerRequest: Obj = {};
    for (const [theirs, mine] of owner.params) ownerRequest[theirs] = request[mine];
    const id = owner.params.length > 0 ? ownerRequest[owner.params[owner.params.length - 1]![0]] : undefined;
    const hidden = () => ApiError.noItem(owner.displayName, id);
    if (owner.self && access.verb === "GET") {
      const item = await run();
      if (memberOf(item, owner.tenantField) !== tenant) throw hidden();
      return item;
    }
    const found = await readOwner(owner.service, owner.rpc, ownerRequest);
    if (found[owner.tenantField] !== tenant) throw hidden();
  }
  if (body && tf) {
    if (body[tf] === undefined || body[tf] === null) body[tf] = tenant;
    else if (body[tf] !== tenant) {
      throw ApiError.forbidden(`You may not assign another tenant's ${tf}`);
    }
  }
  if (access.shape === "collection" && access.collectionField) {
    if (access.tenantFilterField) {
      const asked = request[access.tenantFilterField];
      if (asked !== undefined && asked !== tenant) return { [access.collectionField]: [] };
      request[access.tenantFilterField] = tenant;
    }
    const result = await run();
    if (tf && isRecord(result)) {
      const items = result[access.collectionField];
      result[access.collectionField] = Array.isArray(items) ? items.filter((i: unknown) => memberOf(i, tf) === tenant) : [];
    }
    return result;
  }
  return run();
}
