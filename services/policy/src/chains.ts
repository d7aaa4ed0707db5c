// Chain (v1): a tenant's list of rules (policy.md §1). No update (PUT is a 405). Its delete takes
// its rules and every jump rule into it, in any chain (the positions of the rules left close up:
// they are computed), each announced, in the delete's transaction.
import { type CallContext, type Change, type Handlers, isUuid, type Queryable, Resource, type Store } from "@vnm/kit";
import { lockChains, type RuleRow, rules } from "./rules.ts";

interface ChainRow {
  id: string;
  tenant_id: string | null;
  name: string | null;
}

type Emit = (c: Change) => void;

/** The chains with jump rules into this one, but itself. */
async function jumpingInto(q: Queryable, id: string): Promise<string[]> {
  const r = await q.query<{ chain_id: string }>("SELECT DISTINCT chain_id FROM rules WHERE jump_chain_id = $1 AND chain_id <> $1", [id]);
  return r.rows.map((x) => x.chain_id);
}

/** Deletes the rules where `where` holds (their chains locked), each announced. */
async function dropRules(q: Queryable, emit: Emit, where: string, id: string): Promise<void> {
  const gone = (await q.query<RuleRow>(`SELECT * FROM rules_now WHERE ${where} ORDER BY chain_id, rank`, [id])).rows;
  await q.query(`DELETE FROM rules WHERE ${where}`, [id]);
  for (const r of gone) emit(rules.change("deleted", r));
}

/**
 * Locks a chain and every chain with jump rules into it, in id order, as rule writes lock them
 * (rules.ts), so that neither waits for the other's locks. A jump rule inserted while the locks
 * were awaited (its insert held the chain FOR KEY SHARE) shows only once this chain is held; its
 * chain would then be locked out of order, against an insert holding it and waiting for this one
 * (a deadlock, one side ABORTED). So the locks are taken again, in order, with it: they are taken
 * under a savepoint, released by rolling back to it. Once this chain is held no insert can add a
 * jump into it, so the second pass finds nothing new unless an insert slipped in between.
 */
async function lockWithJumpers(q: Queryable, id: string): Promise<void> {
  let jumpers = await jumpingInto(q, id);
  await q.query("SAVEPOINT chain_locks");
  for (;;) {
    await lockChains(q, [id, ...jumpers]);
    const now = await jumpingInto(q, id);
    if (now.every((c) => jumpers.includes(c))) break;
    await q.query("ROLLBACK TO SAVEPOINT chain_locks");
    jumpers = [...new Set([...jumpers, ...now])];
  }
  await q.query("RELEASE SAVEPOINT chain_locks");
}

class ChainResource extends Resource<"vnm.policy.v1.Chain", ChainRow> {
  override handlers(store: Store): Handlers {
    const out = super.handlers(store);
    const remove = this.info.rpcs.delete!;
    out[remove] = async (req: Record<string, unknown>, ctx: CallContext) => {
      await store.tx(ctx, async (q, emit) => {
        const id = isUuid(req["id"]) ? req["id"].toLowerCase() : undefined;
        if (id) await lockWithJumpers(q, id);
        await this.remove(q, emit, req, ctx);
      });
      return {};
    };
    return out;
  }
}

export const chains = new ChainResource({
  proto: "vnm.policy.v1.Chain",
  table: "chains",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  columns: (c) => ({ tenant_id: c.tenantId ?? null, name: c.name ?? null }),
  async cascade(q, c, emit) {
    // It and every chain jumping into it are locked (lockWithJumpers, in the delete's handler,
    // its only caller): no jump into it can be added now.
    await dropRules(q, emit, "chain_id = $1", c.id);
    await dropRules(q, emit, "jump_chain_id = $1", c.id);
  },
});
