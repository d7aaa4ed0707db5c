// Items of another service that it announced deleted, kept a while as tombstones in a table of
// this service's (`id uuid PRIMARY KEY, at timestamptz NOT NULL DEFAULT now()`, and an index on
// `at`: each burial prunes the old ones, which would otherwise read them all). A write naming
// such an item and the deletion's handling take the same transaction lock, and the write finds
// the tombstone, so a write racing the deletion never survives it (the other service is asked
// only once the lock is held).
import { assertIdentifier, type Queryable } from "./db.ts";

/** Tombstones are only needed while a deletion may race a write: a day is plenty. */
const TOMBSTONE_DAYS = 1;

export class Tombstones {
  private readonly table: string;
  private readonly lockPrefix: string;

  /** `lockPrefix` names the lock's key apart from every other part's (locks are the database's). */
  constructor(table: string, lockPrefix: string) {
    this.table = assertIdentifier(table);
    this.lockPrefix = lockPrefix;
  }

  /** The key of the item's transaction lock. */
  private keyOf(id: string): string {
    return `${this.lockPrefix}:${id}`;
  }

  /** Serialises the writes that concern the item, until the transaction ends. */
  async lock(q: Queryable, id: string): Promise<void> {
    await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [this.keyOf(id)]);
  }

  /** Locks the item; whether it was announced deleted. */
  async lockedGone(q: Queryable, id: string): Promise<boolean> {
    await this.lock(q, id);
    return ((await q.query(`SELECT 1 FROM ${this.table} WHERE id = $1`, [id])).rowCount ?? 0) > 0;
  }

  /** Locks the item and keeps it known as gone; tombstones older than a day go. */
  async bury(q: Queryable, id: string): Promise<void> {
    await this.buryAll(q, [id]);
  }

  /**
   * Locks the items, in the order of their ids (two transactions burying some of the same items
   * never wait for each other crosswise), and keeps them known as gone; tombstones older than
   * a day go. For a batch of deletions handled in one transaction.
   */
  async buryAll(q: Queryable, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const keys = ids.map((id) => this.keyOf(id)).sort();
    // The subquery's order is the order the outer query takes, and so its locks.
    await q.query("SELECT count(pg_advisory_xact_lock(hashtext(k))) FROM (SELECT k FROM unnest($1::text[]) AS k ORDER BY k) sorted", [keys]);
    await q.query(`INSERT INTO ${this.table} (id) SELECT unnest($1::uuid[]) ON CONFLICT (id) DO NOTHING`, [ids]);
    await q.query(`DELETE FROM ${this.table} WHERE at < now() - interval '${TOMBSTONE_DAYS} day'`);
  }
}
