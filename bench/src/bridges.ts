// The bridges the bench reads, made and removed through the public HTTP API (POST and DELETE
// /bridges): a 100-bridge tenant for the collection, a 10-bridge tenant for the fixed list, and
// growth bridges spread over 1,000 tenants that take the table to each size the growth rows need.
import { DEPS } from "@vnm/kit/testing";
import pg from "pg";
import { fmt } from "./table.ts";

/** Requests in flight while the table grows or shrinks. */
const CONCURRENCY = 16;
const GROWTH_TENANTS = 1000;
export const JSON_TYPE = { "content-type": "application/json" };

export const COLL_TENANT = "bench-coll";
export const FIXED_TENANT = "bench-fixed";

type Api = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** Runs `task(0..n-1)`, `CONCURRENCY` at a time; gives the results in order. */
async function pool<T>(n: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      out[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n) }, worker));
  return out;
}

export class Bridges {
  private readonly api: Api;
  private readonly base: string;
  private readonly schema: string;
  readonly collection: string[] = [];
  readonly fixed: string[] = [];
  private readonly growth: string[] = [];

  /** `schema`: the bridge service's, for its table's maintenance after a change of size. */
  constructor(api: Api, base: string, schema: string) {
    this.api = api;
    this.base = base;
    this.schema = schema;
  }

  /** Bridges in the table now. */
  get rows(): number {
    return this.collection.length + this.fixed.length + this.growth.length;
  }

  private async createOne(name: string, tenantId: string): Promise<string> {
    const r = await this.api(`${this.base}/bridges`, { method: "POST", headers: JSON_TYPE, body: JSON.stringify({ name, tenantId }) });
    if (r.status !== 201) throw new Error(`POST /bridges: ${r.status} ${await r.text()}`);
    return new URL(r.headers.get("location")!).pathname.split("/").pop()!;
  }

  /** The collection's and the fixed tenant's bridges, then growth bridges up to `total`. */
  async seed(total: number): Promise<void> {
    this.collection.push(...(await pool(100, (i) => this.createOne(`bench-${i + 1}`, COLL_TENANT))));
    // One at a time: the item the rows read is the fixed tenant's first.
    for (let i = 1; i <= 10; i++) this.fixed.push(await this.createOne(`bench-${i}`, FIXED_TENANT));
    await this.growTo(total);
  }

  /** Adds growth bridges (round-robin over the growth tenants) until the table holds `total`. */
  async growTo(total: number): Promise<void> {
    const from = this.growth.length;
    const n = total - this.rows;
    if (n <= 0) return;
    const t0 = Date.now();
    const tenant = (i: number) => `gt${String(i % GROWTH_TENANTS).padStart(4, "0")}`;
    this.growth.push(...(await pool(n, (i) => this.createOne(`bench-${from + i + 1}`, tenant(from + i)))));
    console.error(`# ${fmt(n)} bridges created through POST /bridges in ${fmt((Date.now() - t0) / 1000, 1)} s`);
  }

  /** Deletes the newest growth bridges until the table holds `total`. */
  async shrinkTo(total: number): Promise<void> {
    const gone = this.growth.splice(Math.max(0, total - this.collection.length - this.fixed.length));
    const t0 = Date.now();
    await pool(gone.length, async (i) => {
      const r = await this.api(`${this.base}/bridges/${gone[i]}`, { method: "DELETE" });
      if (r.status !== 204) throw new Error(`DELETE /bridges/${gone[i]}: ${r.status} ${await r.text()}`);
    });
    console.error(`# ${fmt(gone.length)} bridges deleted through DELETE /bridges/:id in ${fmt((Date.now() - t0) / 1000, 1)} s`);
  }

  /**
   * After the table changed size: VACUUM ANALYZE (this machine's Postgres runs without
   * autovacuum, which a deployment has: the first reads would otherwise check the new rows'
   * visibility and write their hint bits) and a CHECKPOINT, so neither lands in the rows
   * measured next. Maintenance only: no row is written.
   */
  async settle(): Promise<void> {
    const db = new pg.Client({ connectionString: DEPS.databaseUrl });
    await db.connect();
    try {
      await db.query(`VACUUM ANALYZE ${pg.escapeIdentifier(this.schema)}.bridges`);
      await db.query("CHECKPOINT").catch((err: Error) => console.error(`# CHECKPOINT: ${err.message} (needs a superuser or pg_checkpoint)`));
    } finally {
      await db.end();
    }
  }

  /** Fetches a list twice (miss, then the cached copy) and checks it holds `n` bridges. */
  async checkList(url: string, n: number): Promise<void> {
    for (let i = 0; i < 2; i++) {
      const r = await this.api(url);
      const items: unknown = await r.json();
      const count = Array.isArray(items) ? items.length : "no list of";
      if (r.status !== 200 || count !== n) throw new Error(`${url}: ${r.status}, ${count} items, expected ${n}`);
    }
  }
}
