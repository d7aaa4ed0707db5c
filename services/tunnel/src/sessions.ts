// Exactly one OVSDB session per VTEP in the whole deployment. Each replica holds a Postgres
// session-level advisory lock per VTEP it watches, on a connection of its own: when the replica
// dies its connection goes and the locks with it, and another replica takes the VTEPs over at its
// next look (every 2 s). VTEPs created or deleted anywhere are picked up or dropped the same way.
// What a session finds is stored in the vteps table and announced, so a GET never waits on a device.
import { type AnyResource, type Logger, resourceOf, type ServiceContext } from "@vnm/kit";
import pg from "pg";
import { type DeviceState, DeviceSession, type VtepAddress } from "./device.ts";

const LOOK_EVERY_MS = 2_000;
const lockKey = (id: string) => `vnm-vtep:${id}`;

interface Watched {
  session: DeviceSession;
  /** The state last stored, and the writes in order. */
  last?: string;
  chain: Promise<void>;
}

export class VtepSessions {
  private readonly svc: ServiceContext;
  private readonly log: Logger;
  private readonly vteps: AnyResource;
  private readonly watched = new Map<string, Watched>();
  private lease: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(svc: ServiceContext) {
    this.svc = svc;
    this.log = svc.log;
    this.vteps = resourceOf("vnm.tunnel.v1.Vtep");
  }

  start(): void {
    this.timer = setInterval(() => this.look(), LOOK_EVERY_MS);
    this.look();
  }

  /** Looks again now (a VTEP was created here). */
  look(): void {
    this.running ??= this.reconcile()
      .catch((err: Error) => this.log.warn("VTEP sessions: could not look at the VTEPs", { err: err.message }))
      .finally(() => {
        this.running = undefined;
      });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    this.dropAll();
  }

  /** Stops every session and gives up every lease (the lease connection is lost, or we stop). */
  private dropAll(): void {
    for (const w of this.watched.values()) w.session.stop();
    this.watched.clear();
    const lease = this.lease;
    this.lease = undefined;
    void lease?.end().catch(() => {});
  }

  private async leaseClient(): Promise<pg.Client> {
    if (this.lease) return this.lease;
    const client = new pg.Client({ connectionString: this.svc.env["DATABASE_URL"] });
    client.on("error", (err) => {
      // Its locks are gone with it: another replica may take these VTEPs now.
      this.log.warn("VTEP leases lost; sessions stopped", { err: err.message });
      if (this.lease === client) this.dropAll();
    });
    await client.connect();
    this.lease = client;
    return client;
  }

  private async reconcile(): Promise<void> {
    const all = (await this.svc.store.query<{ id: string; management_ip: string; management_port: number }>("SELECT id, management_ip, management_port FROM vteps")).rows;
    const lease = await this.leaseClient();
    const present = new Set(all.map((v) => v.id));
    for (const [id, w] of this.watched) {
      if (present.has(id)) continue;
      w.session.stop();
      this.watched.delete(id);
      await lease.query("SELECT pg_advisory_unlock(hashtext($1))", [lockKey(id)]);
    }
    for (const v of all) {
      if (this.watched.has(v.id)) continue;
      const got = await lease.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS ok", [lockKey(v.id)]);
      if (got.rows[0]?.ok) this.watch({ id: v.id, ip: v.management_ip, port: v.management_port });
    }
  }

  private watch(vtep: VtepAddress): void {
    const w: Watched = { session: new DeviceSession(vtep, (s) => this.report(vtep.id, w, s), this.log), chain: Promise.resolve() };
    this.watched.set(vtep.id, w);
    w.session.start();
  }

  /** Stores each state in the order the session reports them. */
  private report(id: string, w: Watched, s: DeviceState): void {
    w.chain = w.chain.then(() => this.store(id, w, s));
  }

  /** Stores and announces a state that differs from the last one stored; a failed write is tried again. */
  private async store(id: string, w: Watched, s: DeviceState): Promise<void> {
    const key = JSON.stringify(s);
    while (w.last !== key && this.watched.get(id) === w) {
      try {
        await this.svc.store.tx(undefined, async (q, emit) => {
          const r = await q.query(
            `UPDATE vteps SET connection_state = $2, name = $3, description = $4, tunnel_ips = $5, ports = $6
             WHERE id = $1 RETURNING *`,
            [id, s.connectionState, s.name, s.description, s.tunnelIps, JSON.stringify(s.ports)],
          );
          if (r.rows[0]) emit(this.vteps.change("updated", r.rows[0]));
        });
        w.last = key;
      } catch (err) {
        this.log.warn("VTEP state not stored yet; trying again", { vtep: id, err: (err as Error).message });
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }
}
