// Exactly one OVSDB session per VTEP in the whole deployment. Each replica holds a Postgres
// session-level advisory lock per VTEP it watches, on a connection of its own: when the replica
// dies its connection goes and the locks with it, and another replica takes the VTEPs over at its
// next look (every 2 s). VTEPs created or deleted anywhere are picked up or dropped the same way.
// What a session finds is stored in the vteps table and announced, so a GET never waits on a device.
//
// The newest state wins: a session only marks its VTEP changed, and one writer per VTEP stores
// the state as it is when the write starts, at most once per WRITE_EVERY_MS. However fast a
// device sends updates, a VTEP has at most one write in flight and none queued behind it.
import type { AnyResource, Logger, ServiceContext } from "@vnm/kit";
import pg from "pg";
import type { Counter } from "prom-client";
import type { AddressPolicy } from "./address-policy.ts";
import { DeviceSession, type VtepAddress } from "./device.ts";
import { vtepMetrics } from "./metrics.ts";
import type { PeerFault } from "./ovsdb.ts";

const LOOK_EVERY_MS = 2_000;
/** The least time between two writes of one VTEP's state (the first change after a quiet spell is written at once). */
export const WRITE_EVERY_MS = 250;
const RETRY_WRITE_MS = 1_000;
const lockKey = (id: string) => `vnm-vtep:${id}`;

interface Watched {
  session: DeviceSession;
  /** The state last stored, as JSON. */
  last?: string;
  /** A change not stored yet. */
  dirty: boolean;
  writing: boolean;
  lastWriteAt: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class VtepSessions {
  private readonly svc: ServiceContext;
  private readonly log: Logger;
  private readonly vteps: AnyResource;
  private readonly policy: AddressPolicy;
  private readonly watched = new Map<string, Watched>();
  private readonly faults: Counter<"reason">;
  private lease: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(svc: ServiceContext, policy: AddressPolicy) {
    this.svc = svc;
    this.log = svc.log;
    this.policy = policy;
    this.vteps = svc.resources.of("vnm.tunnel.v1.Vtep");
    this.faults = vtepMetrics(svc.metrics.registry, () => [...this.watched.values()].map((w) => w.session.connectionState)).faults;
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
    // A row stored before the address policy (or written around the API) is not contacted either.
    const refused = this.policy.refusal(vtep.ip);
    const hooks = {
      changed: () => this.changed(vtep.id, w),
      fault: (reason: PeerFault) => this.faults.inc({ reason }),
    };
    const w: Watched = { session: new DeviceSession(vtep, hooks, this.log, refused && `its management address ${vtep.ip} ${refused}`), dirty: false, writing: false, lastWriteAt: 0 };
    this.watched.set(vtep.id, w);
    w.session.start();
  }

  /** Marks the VTEP changed; its writer stores the newest state. */
  private changed(id: string, w: Watched): void {
    w.dirty = true;
    if (w.writing) return;
    w.writing = true;
    this.write(id, w)
      .catch((err: Error) => this.log.error("VTEP state writer failed", { vtep: id, err }))
      .finally(() => {
        w.writing = false;
      });
  }

  /** Stores and announces the state while it differs from the last one stored; a failed write is tried again. */
  private async write(id: string, w: Watched): Promise<void> {
    while (w.dirty && this.watched.get(id) === w) {
      const wait = w.lastWriteAt + WRITE_EVERY_MS - Date.now();
      if (wait > 0) await sleep(wait);
      if (this.watched.get(id) !== w) return;
      w.dirty = false;
      const s = w.session.state();
      const key = JSON.stringify(s);
      if (key === w.last) continue;
      w.lastWriteAt = Date.now();
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
        w.dirty = true;
        await sleep(RETRY_WRITE_MS);
      }
    }
  }
}
