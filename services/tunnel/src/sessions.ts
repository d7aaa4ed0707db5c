// Exactly one OVSDB session per VTEP in the whole deployment. Each replica holds a Postgres
// session-level advisory lock per VTEP it watches, on a connection of its own: when the replica
// dies its connection goes and the locks with it, and another replica takes the VTEPs over at its
// next look (every 2 s). VTEPs created or deleted anywhere are picked up or dropped the same way.
// What a session finds is stored in the vteps table (the switch) and vtep_ports (a row per port),
// and announced, so a GET never waits on a device.
//
// The newest state wins: a session only marks its VTEP changed, and one writer per VTEP stores
// the state as it is when the write starts: once per write interval (VNM_VTEP_WRITE_INTERVAL_MS)
// for a device that keeps changing, after a burst of WRITE_BURST writes at once for one that was
// quiet (a token bucket); a session found or lost is stored at once. A write stores what
// differs from what the database holds: the switch's row when it changed, and only the ports
// added, changed or gone, so a device changing one port of thousands writes one row. However
// fast a device sends updates, a VTEP has at most one write in flight and none queued behind it.
import { status } from "@grpc/grpc-js";
import { type AnyResource, ApiError, type Logger, messageOf, type ServiceContext, vxlanPortId } from "@vnm/kit";
import pg from "pg";
import type { Counter } from "prom-client";
import type { AddressPolicy } from "./address-policy.ts";
import { type DeviceState, DeviceSession, type VtepAddress } from "./device.ts";
import { vtepMetrics } from "./metrics.ts";
import { boundOn } from "./bindings.ts";
import { remoteState } from "./remote-macs.ts";
import { type Learned, learnedOnly, reconcile } from "./vxgw.ts";
import type { PeerFault } from "./ovsdb.ts";

const LOOK_EVERY_MS = 2_000;
/** The default of VNM_VTEP_WRITE_INTERVAL_MS: the time between two writes of one VTEP's state while its device keeps changing. */
export const DEFAULT_WRITE_INTERVAL_MS = 1_000;
/** Writes a VTEP whose device was quiet for WRITE_BURST intervals may make at once (its connection, then a first change). */
export const WRITE_BURST = 2;
const RETRY_WRITE_MS = 1_000;
/**
 * The least time between the start of a pass over the device and a learned-MAC pass its updates
 * ask for: a device changing its MACs without end costs at most one such pass (reading two tables)
 * per interval, however many updates it sends (they are coalesced), and a lone change after a
 * quiet spell is read at once.
 */
export const LEARNED_GAP_MS = 500;
/** Bytes of port names and descriptions sent in one statement. */
const BATCH_BYTES = 1024 * 1024;
const lockKey = (id: string) => `vnm-vtep:${id}`;

/** What the database holds of a VTEP's state. */
interface Stored {
  /** connection state, name, description, tunnel IPs, connection error, as JSON. */
  head: string;
  /**
   * The session's phase when that state was taken (as read back: the state's connection state).
   * A phase, not the state: a connected device's switch coming and going changes the state but
   * not the phase, and is paced as any change of the device.
   */
  phase: DeviceState["connectionState"];
  /** Description by port name. */
  ports: Map<string, string>;
}

interface Watched {
  session: DeviceSession;
  /** The VTEP's management address (its switch is the one that names it). */
  ip: string;
  /** A pass over the device runs (vxgw.ts); another is due when it ends: a full reconcile, or only its learned MACs read. */
  programming: boolean;
  fullDue: boolean;
  learnedDue: boolean;
  /** What the bridge service was last told the device learned, by bridge (vxgw.ts). */
  told: Map<string, string>;
  /** A reconcile asked for by the device's learned-MAC monitor, not started yet. */
  learnedTimer?: NodeJS.Timeout;
  /** When the last reconcile started (performance.now()). */
  programmedAt: number;
  /** The last reconcile's failure, logged once. */
  programError?: string;
  /** A full reconcile tried again after a failed one, sooner than the periodic one (doubling from RETRY_FIRST_MS). */
  retryTimer?: NodeJS.Timeout;
  retryMs?: number;
  /** What the database holds, once read or written; unknown after a failed write. */
  stored?: Stored;
  /** A change not stored yet. */
  dirty: boolean;
  writing: boolean;
  /** Writes it may make now (up to WRITE_BURST, one more per interval), as of `tokensAt`. */
  tokens: number;
  tokensAt: number;
  /** Ends the writer's wait for a token (a session found or lost does not wait). */
  wake?: () => void;
}

/** Whether the session was found or lost since the VTEP's state was stored. */
const moved = (w: Watched): boolean => w.stored !== undefined && w.stored.phase !== w.session.connectionState;

export interface SessionsConfig {
  policy: AddressPolicy;
  /** Bytes of state a device may have kept (VNM_VTEP_STATE_BUDGET_BYTES). */
  budget: number;
  /** VNM_VTEP_WRITE_INTERVAL_MS. */
  writeEveryMs: number;
  /** VNM_VTEP_RECONCILE_MS: every connected device reconciled in full this often, whatever was announced. */
  reconcileEveryMs: number;
}

/** A failed full reconcile (the API or the device could not be read or written) is tried again after this, doubling up to the periodic one's interval. */
const RETRY_FIRST_MS = 500;

/** At most one reconcile of every device per this many ms for announced changes (a burst of writes makes one). */
const ANNOUNCED_GAP_MS = 250;

const headOf = (s: Pick<DeviceState, "connectionState" | "name" | "description" | "tunnelIps" | "connectionError">) =>
  JSON.stringify([s.connectionState, s.name, s.description, s.tunnelIps, s.connectionError]);

/** Splits rows into statements of about BATCH_BYTES each. */
function* batches(rows: [string, string][]): Generator<[string[], string[]]> {
  let names: string[] = [];
  let descriptions: string[] = [];
  let bytes = 0;
  for (const [name, description] of rows) {
    names.push(name);
    descriptions.push(description);
    bytes += name.length + description.length;
    if (bytes >= BATCH_BYTES) {
      yield [names, descriptions];
      names = [];
      descriptions = [];
      bytes = 0;
    }
  }
  if (names.length > 0) yield [names, descriptions];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class VtepSessions {
  private readonly svc: ServiceContext;
  private readonly log: Logger;
  private readonly vteps: AnyResource;
  private readonly policy: AddressPolicy;
  private readonly config: SessionsConfig;
  private readonly watched = new Map<string, Watched>();
  private readonly faults: Counter<"reason">;
  private lease: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private programTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private announcedTimer: NodeJS.Timeout | undefined;
  private announcedAt = 0;

  constructor(svc: ServiceContext, config: SessionsConfig) {
    this.svc = svc;
    this.log = svc.log;
    this.policy = config.policy;
    this.config = config;
    this.vteps = svc.resources.of("vnm.tunnel.v1.Vtep");
    this.faults = vtepMetrics(svc.metrics.registry, () => [...this.watched.values()].map((w) => w.session.connectionState)).faults;
  }

  start(): void {
    this.timer = setInterval(() => this.look(), LOOK_EVERY_MS);
    this.programTimer = setInterval(() => this.programAll(), this.config.reconcileEveryMs);
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
    clearInterval(this.programTimer);
    clearTimeout(this.announcedTimer);
    await this.running;
    this.dropAll();
  }

  /** Stops every session and gives up every lease (the lease connection is lost, or we stop). */
  private dropAll(): void {
    for (const w of this.watched.values()) {
      clearTimeout(w.learnedTimer);
      clearTimeout(w.retryTimer);
      w.session.stop();
    }
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
      clearTimeout(w.learnedTimer);
      clearTimeout(w.retryTimer);
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
      connected: () => this.program(vtep.id, vtep.ip),
      learned: () => this.learned(vtep.id, w),
    };
    const session = new DeviceSession(vtep, hooks, this.log, refused && `its management address ${vtep.ip} ${refused}`, this.config.budget);
    const w: Watched = { session, ip: vtep.ip, dirty: false, writing: false, programming: false, fullDue: false, learnedDue: false, told: new Map(), programmedAt: 0, tokens: WRITE_BURST, tokensAt: Date.now() };
    this.watched.set(vtep.id, w);
    w.session.start();
  }

  /**
   * The device's learned MACs changed: one pass reading them soon (only Logical_Switch and
   * Ucast_Macs_Local; the API is not asked), no sooner than LEARNED_GAP_MS after the last pass
   * started.
   */
  private learned(id: string, w: Watched): void {
    if (w.learnedTimer || this.watched.get(id) !== w) return;
    const wait = Math.max(0, w.programmedAt + LEARNED_GAP_MS - performance.now());
    w.learnedTimer = setTimeout(() => {
      w.learnedTimer = undefined;
      this.program(id, w.ip, false);
    }, wait);
  }

  /**
   * Something a device holds changed (announced by this or another part): every connected device
   * reconciled soon, at most once per ANNOUNCED_GAP_MS however many changes come.
   */
  announced(): void {
    if (this.announcedTimer) return;
    const wait = Math.max(0, this.announcedAt + ANNOUNCED_GAP_MS - performance.now());
    this.announcedTimer = setTimeout(() => {
      this.announcedTimer = undefined;
      this.announcedAt = performance.now();
      this.programAll();
    }, wait);
  }

  /** Programs every connected device this replica watches with the bindings (vxgw.ts). */
  programAll(): void {
    for (const [id, w] of this.watched) if (w.session.connectionState === "connected") this.program(id, w.ip);
  }

  /**
   * Brings one device to the bindings of its VTEP (`full`), or only reports what it learned; one
   * pass at a time per VTEP (a full one due meanwhile wins over a learned-only one), a failure
   * logged once.
   */
  private program(id: string, ip: string, full = true): void {
    const w = this.watched.get(id);
    if (!w) return;
    if (full) w.fullDue = true;
    else w.learnedDue = true;
    if (w.programming) return;
    w.programming = true;
    const once = async () => {
      while (w.fullDue || w.learnedDue) {
        const whole = w.fullDue;
        w.fullDue = false;
        w.learnedDue = false;
        if (this.watched.get(id) !== w || w.session.connectionState !== "connected") return;
        w.programmedAt = performance.now();
        try {
          const bound = await boundOn(this.svc.store.pool, id);
          const transact = (ops: Record<string, unknown>[]) => w.session.transact(ops);
          const remote = whole ? await remoteState(this.svc, this.svc.store.pool, id, bound.map((b) => b.bridgeId)) : undefined;
          const learned = remote ? await reconcile(transact, ip, bound, remote) : await learnedOnly(transact, bound);
          await this.report(id, w, learned);
          // What could not be read left those rows as they were; said like a refused write.
          if (remote?.problem) throw new Error(remote.problem);
          if (w.programError) this.log.info("VTEP device programmed again", { vtep: id });
          w.programError = undefined;
          if (whole) w.retryMs = undefined;
        } catch (err) {
          const message = messageOf(err);
          if (w.programError !== message) this.log.warn("VTEP device not programmed; trying again", { vtep: id, err: message });
          w.programError = message;
          this.retry(id, w);
        }
      }
    };
    once().finally(() => {
      w.programming = false;
    });
  }

  /** A full reconcile again soon after a failed one (a service or the device back), backing off to the periodic interval. */
  private retry(id: string, w: Watched): void {
    if (w.retryTimer) return;
    w.retryMs = Math.min(this.config.reconcileEveryMs, w.retryMs ? w.retryMs * 2 : RETRY_FIRST_MS);
    w.retryTimer = setTimeout(() => {
      w.retryTimer = undefined;
      if (this.watched.get(id) === w) this.program(id, w.ip);
    }, w.retryMs);
  }

  /**
   * Tells the bridge service what the device learned in each bound bridge's switch, when it
   * differs from what was last told; a bridge no longer bound here is told none (its entries on
   * the VXLAN port go; they went with its VXLAN port already, and a bridge deleted has none).
   */
  private async report(id: string, w: Watched, learned: Learned): Promise<void> {
    for (const bridge of w.told.keys()) if (!learned.has(bridge)) learned.set(bridge, []);
    for (const [bridge, macs] of learned) {
      const key = JSON.stringify(macs);
      if (w.told.get(bridge) === key) continue;
      try {
        await this.svc.call("vnm.bridge.v1.BridgeService", "SetLearnedMacs", { id: bridge, portId: vxlanPortId(bridge, id), macs });
      } catch (err) {
        // A bridge deleted took its entries: none is what it has.
        if (macs.length > 0 || ApiError.from(err, "bridge").code !== status.NOT_FOUND) throw err;
      }
      if (macs.length === 0) w.told.delete(bridge);
      else w.told.set(bridge, key);
    }
  }

  /** Marks the VTEP changed; its writer stores the newest state. */
  private changed(id: string, w: Watched): void {
    w.dirty = true;
    if (w.writing) {
      if (moved(w)) w.wake?.();
      return;
    }
    w.writing = true;
    this.write(id, w)
      .catch((err: Error) => this.log.error("VTEP state writer failed", { vtep: id, err }))
      .finally(() => {
        w.writing = false;
      });
  }

  /** What the database holds of the VTEP; undefined when it is gone. */
  private async readStored(id: string): Promise<Stored | undefined> {
    const v = (await this.svc.store.query<DeviceState>("SELECT connection_state AS \"connectionState\", name, description, tunnel_ips AS \"tunnelIps\", connection_error AS \"connectionError\" FROM vteps WHERE id = $1", [id])).rows[0];
    if (!v) return undefined;
    const rows = (await this.svc.store.query<{ name: string; description: string }>("SELECT name, description FROM vtep_ports WHERE vtep_id = $1", [id])).rows;
    return { head: headOf(v), phase: v.connectionState, ports: new Map(rows.map((r) => [r.name, r.description])) };
  }

  /**
   * Waits for the VTEP's next write (a token of its bucket). A session found or lost is stored
   * at once, whatever the device's port changes spent, and ends a wait under way: a bind reads
   * it (a VTEP that reads disconnected is refused). The session's back-off bounds how often.
   */
  private async writeAllowed(w: Watched): Promise<void> {
    const every = this.config.writeEveryMs;
    const refill = () => {
      const now = Date.now();
      w.tokens = Math.min(WRITE_BURST, w.tokens + (now - w.tokensAt) / every);
      w.tokensAt = now;
    };
    refill();
    if (w.tokens >= 1 || moved(w)) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.ceil((1 - w.tokens) * every));
      w.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    w.wake = undefined;
    refill();
  }

  /** Stores and announces the state while it differs from what is stored; a failed write is tried again. */
  private async write(id: string, w: Watched): Promise<void> {
    while (w.dirty && this.watched.get(id) === w) {
      await this.writeAllowed(w);
      if (this.watched.get(id) !== w) return;
      w.dirty = false;
      try {
        w.stored ??= await this.readStored(id);
        const stored = w.stored;
        if (!stored) return; // deleted: the next look stops the session
        const s = w.session.state();
        const phase = w.session.connectionState;
        const head = headOf(s);
        const changed: [string, string][] = [];
        for (const [name, description] of s.ports) if (stored.ports.get(name) !== description) changed.push([name, description]);
        const gone: string[] = [];
        for (const name of stored.ports.keys()) if (!s.ports.has(name)) gone.push(name);
        if (head === stored.head && changed.length === 0 && gone.length === 0) continue;
        w.tokens = Math.max(0, w.tokens - 1);
        // Unknown until it commits: a write whose outcome is not known is read back before the next.
        w.stored = undefined;
        const written = await this.svc.store.tx(undefined, async (q, emit) => {
          const row =
            head === stored.head
              ? (await q.query("SELECT * FROM vteps WHERE id = $1 FOR KEY SHARE", [id])).rows[0]
              : (
                  await q.query("UPDATE vteps SET connection_state = $2, name = $3, description = $4, tunnel_ips = $5, connection_error = $6 WHERE id = $1 RETURNING *", [
                    id,
                    s.connectionState,
                    s.name,
                    s.description,
                    s.tunnelIps,
                    s.connectionError,
                  ])
                ).rows[0];
          if (!row) return false;
          if (s.ports.size === 0 && gone.length > 0) await q.query("DELETE FROM vtep_ports WHERE vtep_id = $1", [id]);
          else for (const [names] of batches(gone.map((n) => [n, ""]))) await q.query("DELETE FROM vtep_ports WHERE vtep_id = $1 AND name = ANY($2::text[])", [id, names]);
          for (const [names, descriptions] of batches(changed)) {
            await q.query(
              `INSERT INTO vtep_ports (vtep_id, name, description) SELECT $1, n, d FROM unnest($2::text[], $3::text[]) AS u(n, d)
               ON CONFLICT (vtep_id, name) DO UPDATE SET description = EXCLUDED.description`,
              [id, names, descriptions],
            );
          }
          emit(this.vteps.change("updated", row));
          // Each port added, changed or gone is announced as its own item (GET /vteps/{id}/ports/{name}).
          const port = (event: "created" | "updated" | "deleted", name: string) => {
            const segment = encodeURIComponent(name);
            emit({ kind: "VtepPort", event, id: segment, path: `/vteps/${id}/ports/${segment}`, tenantId: null });
          };
          for (const [name] of changed) port(stored.ports.has(name) ? "updated" : "created", name);
          for (const name of gone) port("deleted", name);
          return true;
        });
        if (!written) return;
        w.stored = { head, phase, ports: s.ports };
      } catch (err) {
        this.log.warn("VTEP state not stored yet; trying again", { vtep: id, err: messageOf(err) });
        w.dirty = true;
        await sleep(RETRY_WRITE_MS);
      }
    }
  }
}
