// Filters and mirrors as references (policy.md §3, §4, §8): a bridge's inboundFilterId and
// outboundFilterId name chains of the policy service, its inboundMirrorIds and outboundMirrorIds
// that service's mirrors. The routing service holds the same rules for routers and ports
// (services/routing/src/filters.ts).
//
// - A write naming a chain or mirror the item does not already name asks the policy service (as
//   this service): missing is a 404 naming the id, and nothing is stored; the policy service down
//   is a 503 naming it. A chain must be one the caller may see (an administrator sees all, anyone
//   else only the chains of their tenant); mirrors are administrators' only, so anyone else naming
//   a new one gets the same 404. A write naming none, or only those it already has, asks nothing.
// - A chain or mirror the policy service announces deleted is cleared from every bridge naming it
//   (the filter nulled, the id taken out of the mirror lists), each bridge announced as updated,
//   and stays known as gone (a tombstone): a write and the deletion's handling take the same lock
//   per id, so a write naming a chain racing its deletion never survives it.
import { AsyncLocalStorage } from "node:async_hooks";
import { type AnyResource, ApiError, type BusMessage, type CallContext, type Change, type Handlers, isJsonObject, isUuid, type Queryable, type ServiceContext, Tombstones } from "@vnm/kit";

const POLICY = "vnm.policy.v1.PolicyService";

/** Chains and mirrors the policy service announced deleted (bridge migration 6). */
export const deletedChains = new Tombstones("deleted_chains", "bridge-chain");
export const deletedMirrors = new Tombstones("deleted_mirrors", "bridge-mirror");

export const noChain = (id: unknown) => ApiError.noItem("Chain", id);
export const noMirror = (id: unknown) => ApiError.noItem("Mirror", id);

/** What a body names. */
export interface Named {
  inboundFilterId?: string | null;
  outboundFilterId?: string | null;
  inboundMirrorIds?: string[];
  outboundMirrorIds?: string[];
}

/** What a stored item names (its row's columns). */
export interface Stored {
  inbound_filter_id: string | null;
  outbound_filter_id: string | null;
  inbound_mirror_ids?: string[];
  outbound_mirror_ids?: string[];
}

/** The call a create or update handler serves, for the hooks the kit runs without it. */
const calls = new AsyncLocalStorage<{ req: Record<string, unknown>; ctx: CallContext }>();

/** The call being served (its request and caller), inside a handler made by `withCall`. */
export const currentCall = () => calls.getStore();

/** The resource, its create and update handlers run with their call known to its hooks (currentCall). */
export function withCall<T extends AnyResource>(resource: T): T {
  const handlers = resource.handlers.bind(resource);
  resource.handlers = (store) => {
    const out: Handlers = handlers(store);
    for (const rpc of [resource.info.rpcs.create, resource.info.rpcs.update]) {
      const h = rpc ? out[rpc] : undefined;
      if (rpc && h) out[rpc] = (req, ctx) => calls.run({ req, ctx }, () => h(req, ctx));
    }
    return out;
  };
  return resource;
}

/**
 * What the item the call updates names now: its row's reference columns, read by the request's
 * `id` (none for a create, whose request has no `id`).
 */
export async function storedOf(q: Queryable, table: "bridges" | "routers" | "ports"): Promise<Stored | undefined> {
  const id = currentCall()?.req["id"];
  if (!isUuid(id)) return undefined;
  const mirrors = table === "routers" ? "" : ", inbound_mirror_ids, outbound_mirror_ids";
  return (await q.query<Stored>(`SELECT inbound_filter_id, outbound_filter_id${mirrors} FROM ${table} WHERE id = $1`, [id.toLowerCase()])).rows[0];
}

const sorted = (ids: (string | null | undefined)[]) => [...new Set(ids.filter((x): x is string => typeof x === "string"))].sort();

/** The caller may see an item of this tenant (administrators see all; a call with no caller is this service's own). */
const visible = (ctx: CallContext | undefined, tenantId: unknown) => {
  const who = ctx?.identity;
  return !who || who.role === "admin" || (typeof tenantId === "string" && who.tenantId === tenantId);
};

/** Asks the policy service for one item: 404 when missing; its own error (503 naming it when down) otherwise. */
async function ask(peers: Pick<ServiceContext, "call">, rpc: "GetChain" | "GetMirror", id: string, missing: ApiError): Promise<Record<string, unknown>> {
  try {
    return await peers.call(POLICY, rpc, { id });
  } catch (err) {
    throw ApiError.from(err).code === missing.code ? missing : err;
  }
}

/**
 * 404 unless every chain and mirror the body names exists and the caller may see it. Each id is
 * locked (in id order) and its tombstone read first; the policy service is asked only of those
 * the item does not already name (`stored`: its row as it is, none for a new item).
 */
export async function requireNamed(
  peers: Pick<ServiceContext, "call">,
  q: Queryable,
  body: Named,
  stored: () => Promise<Stored | undefined>,
  ctx: CallContext | undefined,
): Promise<void> {
  const chains = sorted([body.inboundFilterId, body.outboundFilterId]);
  const mirrors = sorted([...(body.inboundMirrorIds ?? []), ...(body.outboundMirrorIds ?? [])]);
  if (chains.length === 0 && mirrors.length === 0) return;
  for (const id of chains) if (await deletedChains.lockedGone(q, id)) throw noChain(id);
  for (const id of mirrors) if (await deletedMirrors.lockedGone(q, id)) throw noMirror(id);
  const row = await stored();
  const had = new Set(row ? [row.inbound_filter_id, row.outbound_filter_id, ...(row.inbound_mirror_ids ?? []), ...(row.outbound_mirror_ids ?? [])] : []);
  for (const id of chains.filter((c) => !had.has(c))) {
    const chain = await ask(peers, "GetChain", id, noChain(id));
    if (!visible(ctx, chain["tenantId"])) throw noChain(id);
  }
  const fresh = mirrors.filter((m) => !had.has(m));
  if (fresh.length > 0 && ctx?.identity && ctx.identity.role !== "admin") throw noMirror(fresh[0]);
  for (const id of fresh) await ask(peers, "GetMirror", id, noMirror(id));
}

const idOf = (msg: BusMessage) => {
  const id = isJsonObject(msg.data) ? msg.data["id"] : undefined;
  return typeof id === "string" && isUuid(id) ? id.toLowerCase() : undefined;
};

/** A kind whose table names chains (and mirrors) in the columns above, announced as it announces a changed row. */
export interface Referrer {
  table: "bridges" | "routers" | "ports";
  mirrors: boolean;
  // biome-ignore lint/suspicious/noExplicitAny: the kind's own row type
  resource: { change(event: "updated", row: any): Change };
}

/** A chain deleted: it stays known as gone, and every row naming it as a filter has it nulled, each announced. */
export function onChainDeleted(svc: ServiceContext, referrers: Referrer[]) {
  return async (msg: BusMessage): Promise<void> => {
    const id = idOf(msg);
    if (!id) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await deletedChains.bury(q, id);
      for (const r of referrers) {
        const cleared = await q.query(
          `UPDATE ${r.table} SET inbound_filter_id = NULLIF(inbound_filter_id, $1), outbound_filter_id = NULLIF(outbound_filter_id, $1)
           WHERE inbound_filter_id = $1 OR outbound_filter_id = $1 RETURNING *`,
          [id],
        );
        for (const row of cleared.rows) emit(r.resource.change("updated", row));
      }
    });
  };
}

/** A mirror deleted: it stays known as gone, and leaves every mirror list naming it, each row announced. */
export function onMirrorDeleted(svc: ServiceContext, referrers: Referrer[]) {
  return async (msg: BusMessage): Promise<void> => {
    const id = idOf(msg);
    if (!id) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await deletedMirrors.bury(q, id);
      for (const r of referrers.filter((x) => x.mirrors)) {
        const cleared = await q.query(
          `UPDATE ${r.table} SET inbound_mirror_ids = array_remove(inbound_mirror_ids, $1::uuid), outbound_mirror_ids = array_remove(outbound_mirror_ids, $1::uuid)
           WHERE inbound_mirror_ids @> ARRAY[$1::uuid] OR outbound_mirror_ids @> ARRAY[$1::uuid] RETURNING *`,
          [id],
        );
        for (const row of cleared.rows) emit(r.resource.change("updated", row));
      }
    });
  };
}
