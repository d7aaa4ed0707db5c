// Filters and mirrors as references (policy.md §3, §4, §8), for every service whose kinds name
// the policy service's chains (`inboundFilterId`, `outboundFilterId`) and mirrors
// (`inboundMirrorIds`, `outboundMirrorIds`): the bridge service's bridges, the routing service's
// routers and ports.
//
// - A write naming a chain or mirror the item does not already name asks the policy service (as
//   the service): missing is a 404 naming the id, and nothing is stored; the policy service down
//   is a 503 naming it. A chain must be one the caller may see (an administrator sees all, anyone
//   else only the chains of their tenant); mirrors are administrators' only, so anyone else naming
//   a new one gets the same 404. A write naming none, or only those it already has, asks nothing.
// - A chain or mirror the policy service announces deleted is cleared from every row naming it
//   (the filter nulled, the id taken out of the mirror lists), each row announced as updated,
//   and stays known as gone (a tombstone): a write and the deletion's handling take the same lock
//   per id, so a write naming a chain racing its deletion never survives it.
import { announcedId, type BusMessage } from "./bus.ts";
import type { Change } from "./changes.ts";
import { assertIdentifier, type Queryable } from "./db.ts";
import { ApiError } from "./errors.ts";
import type { CallContext, ServiceContext } from "./service.ts";
import { maySee } from "./tenancy.ts";
import { Tombstones } from "./tombstones.ts";

const POLICY = "vnm.policy.v1.PolicyService";

const noChain = (id: unknown) => ApiError.noItem("Chain", id);
const noMirror = (id: unknown) => ApiError.noItem("Mirror", id);

/** What a body names. */
export interface PolicyNamed {
  inboundFilterId?: string | null;
  outboundFilterId?: string | null;
  inboundMirrorIds?: string[];
  outboundMirrorIds?: string[];
}

/** What a stored item names (its row's columns; a kind without mirror lists has none). */
export interface PolicyStored {
  inbound_filter_id?: string | null;
  outbound_filter_id?: string | null;
  inbound_mirror_ids?: string[];
  outbound_mirror_ids?: string[];
}

/** A kind whose table names chains (and mirrors) in the columns above, announced as it announces a changed row. */
export interface PolicyReferrer {
  table: string;
  mirrors: boolean;
  // biome-ignore lint/suspicious/noExplicitAny: the kind's own row type
  resource: { change(event: "updated", row: any): Change };
}

const sorted = (ids: (string | null | undefined)[]) => [...new Set(ids.filter((x): x is string => typeof x === "string"))].sort();

/** The caller may see an item of this tenant (maySee). */
const visible = (ctx: CallContext | undefined, tenantId: unknown) => maySee(ctx?.identity, tenantId);

/**
 * One service's references to the policy service's chains and mirrors: its tombstones of them
 * (tables `deleted_chains` and `deleted_mirrors` in its schema, `id uuid PRIMARY KEY, at
 * timestamptz NOT NULL DEFAULT now()`), the check a write makes, and the handling of their
 * deletions. `owner` (the service's domain) keeps its locks apart from every other part's.
 */
export class PolicyReferences {
  private readonly chains: Tombstones;
  private readonly mirrors: Tombstones;
  private peers: Pick<ServiceContext, "call"> | undefined;

  constructor(owner: string) {
    this.chains = new Tombstones("deleted_chains", `${owner}-chain`);
    this.mirrors = new Tombstones("deleted_mirrors", `${owner}-mirror`);
  }

  /** The service's calls, once it has started: the policy service is asked as the service. */
  connect(peers: Pick<ServiceContext, "call">): void {
    this.peers = peers;
  }

  /** Asks the policy service for one item: 404 when missing; its own error (503 naming it when down) otherwise. */
  private async ask(rpc: "GetChain" | "GetMirror", id: string, missing: ApiError): Promise<Record<string, unknown>> {
    if (!this.peers) throw new Error("the policy service's references are checked before the service started");
    try {
      return await this.peers.call(POLICY, rpc, { id });
    } catch (err) {
      throw ApiError.from(err).code === missing.code ? missing : err;
    }
  }

  /**
   * 404 unless every chain and mirror the body names exists and the caller may see it. Each id is
   * locked (in id order) and its tombstone read first; the policy service is asked only of those
   * the item does not already name (`stored`: its row as it is, none for a new item).
   */
  async require(q: Queryable, body: PolicyNamed, stored: PolicyStored | undefined, ctx: CallContext | undefined): Promise<void> {
    const chains = sorted([body.inboundFilterId, body.outboundFilterId]);
    const mirrors = sorted([...(body.inboundMirrorIds ?? []), ...(body.outboundMirrorIds ?? [])]);
    if (chains.length === 0 && mirrors.length === 0) return;
    for (const id of chains) if (await this.chains.lockedGone(q, id)) throw noChain(id);
    for (const id of mirrors) if (await this.mirrors.lockedGone(q, id)) throw noMirror(id);
    const had = new Set(stored ? [stored.inbound_filter_id, stored.outbound_filter_id, ...(stored.inbound_mirror_ids ?? []), ...(stored.outbound_mirror_ids ?? [])] : []);
    for (const id of chains.filter((c) => !had.has(c))) {
      const chain = await this.ask("GetChain", id, noChain(id));
      if (!visible(ctx, chain["tenantId"])) throw noChain(id);
    }
    const fresh = mirrors.filter((m) => !had.has(m));
    if (fresh.length > 0 && ctx?.identity && ctx.identity.role !== "admin") throw noMirror(fresh[0]);
    for (const id of fresh) await this.ask("GetMirror", id, noMirror(id));
  }

  /** A chain deleted: it stays known as gone, and every row naming it as a filter has it nulled, each announced. */
  onChainDeleted(svc: Pick<ServiceContext, "store">, referrers: PolicyReferrer[]) {
    return async (msg: BusMessage): Promise<void> => {
      const id = announcedId(msg);
      if (!id) return;
      await svc.store.tx(undefined, async (q, emit) => {
        await this.chains.bury(q, id);
        for (const r of referrers) {
          const cleared = await q.query(
            `UPDATE ${assertIdentifier(r.table)} SET inbound_filter_id = NULLIF(inbound_filter_id, $1), outbound_filter_id = NULLIF(outbound_filter_id, $1)
             WHERE inbound_filter_id = $1 OR outbound_filter_id = $1 RETURNING *`,
            [id],
          );
          for (const row of cleared.rows) emit(r.resource.change("updated", row));
        }
      });
    };
  }

  /** A mirror deleted: it stays known as gone, and leaves every mirror list naming it, each row announced. */
  onMirrorDeleted(svc: Pick<ServiceContext, "store">, referrers: PolicyReferrer[]) {
    return async (msg: BusMessage): Promise<void> => {
      const id = announcedId(msg);
      if (!id) return;
      await svc.store.tx(undefined, async (q, emit) => {
        await this.mirrors.bury(q, id);
        for (const r of referrers.filter((x) => x.mirrors)) {
          const cleared = await q.query(mirrorClearing(r.table), [id]);
          for (const row of cleared.rows) emit(r.resource.change("updated", row));
        }
      });
    };
  }
}

/**
 * The statement taking a deleted mirror ($1) out of a table's mirror lists, returning the rows it
 * changed. Each side names its index's condition (a list that is not empty), so the planner can
 * use the partial indexes the bridge and routing migrations make, which hold only such lists.
 */
export function mirrorClearing(table: string): string {
  return `UPDATE ${assertIdentifier(table)} SET inbound_mirror_ids = array_remove(inbound_mirror_ids, $1::uuid), outbound_mirror_ids = array_remove(outbound_mirror_ids, $1::uuid)
    WHERE (inbound_mirror_ids <> '{}' AND inbound_mirror_ids @> ARRAY[$1::uuid]) OR (outbound_mirror_ids <> '{}' AND outbound_mirror_ids @> ARRAY[$1::uuid]) RETURNING *`;
}
