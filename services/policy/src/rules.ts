// Rule (v2): created in its chain (POST /chains/{chainId}/rules) at a position, read and deleted
// at /rules/{id}, never changed. `type` is the discriminator: each type takes its own fields (the
// others sent are dropped) and requires some (a missing one is a 400 naming it). A rule follows
// its chain's tenant (rules_now), goes with its chain, and a jump rule with the chain it jumps to.
//
// Position: a rule's `rank` orders its chain; its position is computed on every read. Every
// insert and delete in a chain locks the chain's row first (FOR UPDATE), so the writes of one
// chain take turns and its positions stay 1..n. An insert takes a rank between its neighbours'
// (migrations.ts): renumbering the chain only when they are adjacent, not on every insert.
import { AsyncLocalStorage } from "node:async_hooks";
import {
  ApiError,
  type CallContext,
  type Checked,
  FILTER_KEY,
  type Handlers,
  type Identity,
  isUuid,
  maySee,
  type Queryable,
  Resource,
  type ResourceSet,
  type Store,
  type Violation,
} from "@vnm/kit";
import { CONDITION_FIELDS, CONDITION_FLAGS, checkCondition, normalCondition } from "./conditions.ts";

type Obj = Record<string, unknown>;
type Rule = Checked<"vnm.policy.v1.Rule">;

export interface RuleRow {
  id: string;
  seq: string;
  chain_id: string;
  rank: string;
  type: string;
  jump_chain_id: string | null;
  fields: Obj;
  tenant_id?: string | null;
  position?: string | number;
}

/** The gap between two ranks when a chain is renumbered: room for 16 halvings at one place. */
export const RANK_STEP = 65536n;

/** The fields each type takes beside the condition (the Resource's `variants`: forms show a type's own). */
const OWN_FIELDS: Record<string, string[]> = {
  accept: [],
  drop: [],
  reject: [],
  return: [],
  jump: ["jumpChainId", "jumpChainName"],
  dnat: ["flowAction", "natTargets"],
  snat: ["flowAction", "natTargets"],
  rev_dnat: ["flowAction"],
  rev_snat: ["flowAction"],
  l2_transform: ["flowAction", "popVlan", "pushVlan", "targetPortId", "ingress", "failOpen"],
  trace: ["requestId", "limit"],
};

const FLOW_ACTIONS: Record<string, string[]> = {
  dnat: ["accept", "continue", "return"],
  snat: ["accept", "continue", "return"],
  rev_dnat: ["accept", "continue", "return"],
  rev_snat: ["accept", "continue", "return"],
  l2_transform: ["accept", "redirect"],
};

const isNat = (type: string) => type === "dnat" || type === "snat";

/** A type's required fields and its flowAction's values (policy.md §2's types table). */
function typeViolations(r: Rule): Violation[] {
  const out: Violation[] = [];
  const b = r as Obj;
  const required = (property: string) => {
    const v = b[property];
    if (v === undefined || v === null || (Array.isArray(v) && v.length === 0)) out.push({ property, message: `is required for a ${r.type} rule` });
  };
  if (r.type === "jump") required("jumpChainId");
  if (r.type === "trace") required("requestId");
  const actions = FLOW_ACTIONS[r.type];
  if (actions) {
    required("flowAction");
    if (r.flowAction !== undefined && !actions.includes(r.flowAction)) {
      out.push({ property: "flowAction", message: `must be one of ${actions.join(", ")} for a ${r.type} rule` });
    }
  }
  if (isNat(r.type)) {
    if (!r.natTargets || r.natTargets.length === 0) out.push({ property: "natTargets", message: `is required for a ${r.type} rule: at least one target` });
  }
  return out;
}

/** The type's own fields as stored and shown (flags false and numbers 0 unless sent). */
function ownFields(r: Rule): Obj {
  const b = r as Obj;
  const out: Obj = {};
  for (const f of OWN_FIELDS[r.type] ?? []) if (b[f] !== undefined && b[f] !== null) out[f] = b[f];
  if (isNat(r.type)) out["natTargets"] = (r.natTargets ?? []).map((t) => ({ ...t, portFrom: t.portFrom ?? 0, portTo: t.portTo ?? 0 }));
  if (r.type === "l2_transform") {
    out["popVlan"] = r.popVlan === true;
    out["ingress"] = r.ingress === true;
    out["failOpen"] = r.failOpen === true;
    out["pushVlan"] ??= 0;
  }
  if (r.type === "trace") out["limit"] ??= "0";
  return out;
}

/** What a create knows beyond its body: the chain of its path, who asks, and the rank it gets. */
interface Placing {
  chainId: string;
  who: Identity | undefined;
  rank?: bigint;
}

const placing = new AsyncLocalStorage<Placing>();

function placement(): Placing {
  const p = placing.getStore();
  if (!p) throw new Error("a rule is created only in its chain (CreateRule)");
  return p;
}

const noChain = (id: unknown) => ApiError.noItem("Chain", id);


/**
 * The rank a rule inserted at `position` (1-based; 0 means 1) takes in the locked chain: 400
 * when the position is past the end. Renumbers the chain when its neighbours are adjacent.
 */
async function rankAt(q: Queryable, chainId: string, position: number): Promise<bigint> {
  const p = position === 0 ? 1 : position;
  const end = async (dir: "min" | "max") => (await q.query<{ r: string | null }>(`SELECT ${dir}(rank) AS r FROM rules WHERE chain_id = $1`, [chainId])).rows[0]!.r;
  // First (the usual insert) is always a place: no count of the chain.
  if (p === 1) {
    const first = await end("min");
    return first === null ? 0n : BigInt(first) - RANK_STEP;
  }
  const n = Number((await q.query<{ n: string }>("SELECT count(*) AS n FROM rules WHERE chain_id = $1", [chainId])).rows[0]!.n);
  if (p > n + 1) throw ApiError.invalid([{ property: "position", message: `position exceeds the number of rules in the chain (${n}): at most ${n + 1}` }]);
  if (n === 0) return 0n;
  if (p === n + 1) return BigInt((await end("max"))!) + RANK_STEP;
  const neighbours = async () => {
    const rows = (await q.query<{ rank: string }>("SELECT rank FROM rules WHERE chain_id = $1 ORDER BY rank OFFSET $2 LIMIT 2", [chainId, p - 2])).rows;
    return [BigInt(rows[0]!.rank), BigInt(rows[1]!.rank)] as const;
  };
  let [before, after] = await neighbours();
  if (after - before < 2n) {
    await renumber(q, chainId);
    [before, after] = await neighbours();
  }
  return before + (after - before) / 2n;
}

/** Spaces a chain's ranks RANK_STEP apart again, in the same order (the chain is locked). */
export async function renumber(q: Queryable, chainId: string): Promise<void> {
  await q.query(
    `UPDATE rules SET rank = o.n * ${RANK_STEP} FROM (SELECT id, row_number() OVER (ORDER BY rank) AS n FROM rules WHERE chain_id = $1) o
     WHERE rules.id = o.id`,
    [chainId],
  );
}

/**
 * Locks chains FOR UPDATE (`update`) or FOR KEY SHARE (`share`) in the order of their ids, as
 * every write of rules does, so that two writes never deadlock over them.
 */
export async function lockChains(q: Queryable, update: string[], share: string[] = []): Promise<Set<string>> {
  const all = [...new Set([...update, ...share])].sort();
  const found = new Set<string>();
  for (const id of all) {
    const mode = update.includes(id) ? "UPDATE" : "KEY SHARE";
    const r = await q.query<{ id: string }>(`SELECT id FROM chains WHERE id = $1 FOR ${mode}`, [id]);
    if (r.rows[0]) found.add(id);
  }
  return found;
}

/** A UUID in lower case, or undefined. */
const uuidOf = (v: unknown) => (isUuid(v) ? v.toLowerCase() : undefined);

/** Rules, created at a position in their chain, listed in position order, deleted with their chain locked. */
class RuleResource extends Resource<"vnm.policy.v1.Rule", RuleRow> {
  private set: ResourceSet | undefined;

  override bind(set: ResourceSet) {
    this.set = set;
    return super.bind(set);
  }

  /**
   * The list's field filters (?type=jump), each value checked against its field's rules (400
   * naming it); the gateway applies them to the items, as this list does not.
   */
  private checkFilters(ctx: CallContext | undefined): void {
    const raw = ctx?.metadata.get(FILTER_KEY)[0];
    if (typeof raw !== "string") return;
    let filters: unknown;
    try {
      filters = JSON.parse(raw);
    } catch {
      throw ApiError.badRequest("The list's filters are not valid JSON");
    }
    if (typeof filters !== "object" || filters === null) return;
    for (const [field, value] of Object.entries(filters)) this.set?.rules?.checkField(this.spec.proto, field, value);
  }

  override handlers(store: Store): Handlers {
    const out = super.handlers(store);
    const { create, delete: remove } = this.info.rpcs;
    out[create!] = (req: Obj, ctx: CallContext) =>
      store.tx(ctx, async (q, emit) => {
        const chainId = uuidOf(req["chainId"]);
        if (!chainId) throw noChain(req["chainId"]);
        // The chain jumped to (as sent: checked below) is locked in id order with this one.
        const sent = req[this.info.body ?? ""] as Obj | undefined;
        const jump = uuidOf(sent?.["jumpChainId"]);
        const found = await lockChains(q, [chainId], jump && jump !== chainId ? [jump] : []);
        if (!found.has(chainId)) throw noChain(req["chainId"]);
        return placing.run({ chainId, who: ctx.identity }, () => this.create(q, emit, req));
      });
    out[remove!] = async (req: Obj, ctx: CallContext) => {
      await store.tx(ctx, async (q, emit) => {
        // The chain first, as an insert locks it: then the rule.
        const id = uuidOf(req["id"]);
        const at = id ? (await q.query<{ chain_id: string }>("SELECT chain_id FROM rules WHERE id = $1", [id])).rows[0] : undefined;
        if (at) await lockChains(q, [at.chain_id]);
        await this.remove(q, emit, req, ctx);
      });
      return {};
    };
    out[this.info.rpcs.list!] = (req: Obj, ctx: CallContext) => {
      this.checkFilters(ctx);
      return this.listOfChain(store.pool, req);
    };
    return out;
  }

  /** A chain's rules in position order, a page at a time (after the marker rule's place). */
  async listOfChain(q: Queryable, req: Obj) {
    const chainId = uuidOf(req["chainId"]);
    const chain = chainId ? (await q.query<{ id: string; tenant_id: string | null }>("SELECT id, tenant_id FROM chains WHERE id = $1", [chainId])).rows[0] : undefined;
    if (!chain) throw noChain(req["chainId"]);
    const limit = req["limit"] === undefined ? undefined : Number(req["limit"]);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 1000)) throw ApiError.invalid([{ property: "limit", message: "must be between 1 and 1000" }]);
    let after: string | undefined;
    if (req["marker"] !== undefined && req["marker"] !== "") {
      const m = uuidOf(req["marker"]);
      const at = m ? (await q.query<{ rank: string }>("SELECT rank FROM rules WHERE id = $1 AND chain_id = $2", [m, chain.id])).rows[0] : undefined;
      if (!at) throw ApiError.invalid([{ property: "marker", message: "must be the id of an item of this list" }]);
      after = at.rank;
    }
    // The page alone is read (an index range on (chain, rank)); its first rule's position is the
    // count of the chain's lower ranks plus one (an index-only count), the others follow it. A
    // page deep in a 10,000-rule chain reads its 100 rules, not the 10,000 before them.
    const rows = (
      await q.query<RuleRow>(
        `WITH page AS (SELECT * FROM rules WHERE chain_id = $1 AND ($2::bigint IS NULL OR rank > $2::bigint) ORDER BY rank LIMIT $3)
         SELECT page.*, (SELECT count(*) FROM rules o WHERE o.chain_id = $1 AND o.rank < (SELECT min(rank) FROM page)) + row_number() OVER (ORDER BY page.rank) AS position
         FROM page ORDER BY page.rank`,
        [chain.id, after ?? null, limit === undefined ? null : limit + 1],
      )
    ).rows;
    const more = limit !== undefined && rows.length > limit;
    if (more) rows.length = limit;
    const items = rows.map((r) => this.toMessage({ ...r, tenant_id: chain.tenant_id }));
    return more ? { items, next_marker: rows[rows.length - 1]!.id } : { items };
  }
}

export const rules = new RuleResource({
  proto: "vnm.policy.v1.Rule",
  table: "rules",
  view: "rules_now",
  tenantColumn: "tenant_id",
  variants: { field: "type", fields: OWN_FIELDS },
  groups: [{ title: "Match conditions", fields: [...CONDITION_FIELDS, ...CONDITION_FLAGS] }],
  // The chain jumped to: one the caller may see (404 naming it otherwise), kept until the rule is written.
  async references(q, r) {
    if (r.type !== "jump" || r.jumpChainId === undefined) return;
    const { who } = placement();
    const row = (await q.query<{ tenant_id: string | null }>("SELECT tenant_id FROM chains WHERE id = $1 FOR KEY SHARE", [r.jumpChainId])).rows[0];
    if (!row || !maySee(who, row.tenant_id)) throw noChain(r.jumpChainId);
  },
  async validate(q, r) {
    const violations = typeViolations(r);
    if (violations.length > 0) throw ApiError.invalid(violations);
    checkCondition(r as Obj, isNat(r.type) ? "nat" : "ordinary", r.natTargets);
    const at = placement();
    at.rank = await rankAt(q, at.chainId, r.position ?? 1);
  },
  columns(r) {
    const at = placement();
    const fields = { ...normalCondition(r as Obj, isNat(r.type) ? "nat" : "ordinary", r.natTargets), ...ownFields(r) };
    return {
      chain_id: at.chainId,
      rank: String(at.rank),
      type: r.type,
      jump_chain_id: r.type === "jump" ? (r.jumpChainId ?? null) : null,
      fields: JSON.stringify(fields),
    };
  },
  render: (r) => ({
    id: r.id,
    chainId: r.chain_id,
    type: r.type,
    position: r.position === undefined ? null : Number(r.position),
    tenantId: r.tenant_id ?? null,
    ...r.fields,
  }),
});
