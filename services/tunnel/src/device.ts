// One VTEP's OVSDB session: connect, check it is a hardware VTEP, monitor its physical switch
// and ports, and keep what it finds. `connected` while the session is up and the switch whose
// management_ips hold the VTEP's address is there; `disconnected` while the device cannot be
// reached (reconnecting with capped exponential back-off and jitter); `error` when something
// answers but not as that VTEP, or breaks the protocol or a bound (see ovsdb.ts).
//
// Only the tables and columns the API serves are kept, checked against their OVSDB types and
// bounded in size, and in all within the device's budget of bytes (VNM_VTEP_STATE_BUDGET_BYTES:
// past it the session ends in `error`, `over_budget`); the state is worked out when it is asked
// for (sessions.ts asks at most once per write), so a device sending updates as fast as it can
// costs no more than its newest state.
import { canonicalIpv6, isRecord, type Logger, messageOf } from "@vnm/kit";
import { excerpt, OvsdbClient, PeerError, type PeerFault } from "./ovsdb.ts";

export type ConnectionState = "connected" | "disconnected" | "error";

export interface DeviceState {
  connectionState: ConnectionState;
  name: string | null;
  description: string | null;
  tunnelIps: string[];
  /** Why the state is `error` (the VTEP's connectionError); null otherwise. */
  connectionError: string | null;
  /** The switch's ports: description by name (a name the device lists twice is kept once). */
  ports: Map<string, string>;
}

export interface VtepAddress {
  id: string;
  ip: string;
  port: number;
}

const CONNECT_TIMEOUT_MS = 3_000;
const ANSWER_TIMEOUT_MS = 3_000;
const ECHO_EVERY_MS = 2_000;
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 5_000;
/** A session that lasted this long starts the back-off afresh when it ends; a shorter one does not. */
const STABLE_MS = 10_000;

/** What a device may hold in the tables kept, and what a value in them may be. */
export const DEVICE_LIMITS = { switches: 256, ports: 16_384, text: 1_024, addresses: 64 };

/** The default of VNM_VTEP_STATE_BUDGET_BYTES: what the service keeps of one device, in UTF-8 bytes of its names, descriptions and addresses. */
export const DEFAULT_STATE_BUDGET = 4 * 1024 * 1024;

/** The longest connectionError kept (a device's words are quoted in it). */
const ERROR_CHARS = 1_024;
const unreachable = (connectionState: "disconnected" | "error", why: string | null = null): DeviceState => ({
  connectionState,
  name: null,
  description: null,
  tunnelIps: [],
  connectionError: connectionState === "error" ? (why ?? "the session failed").slice(0, ERROR_CHARS) : null,
  ports: new Map(),
});

/** Delay before the n-th retry: doubling from 250 ms up to 5 s, then a random half to the full step. */
export function backoff(attempt: number): number {
  const step = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 16));
  return Math.round(step / 2 + Math.random() * (step / 2));
}

// The columns kept, with their OVSDB types (RFC 7047 5.1: a set is ["set", [...]] or a bare
// atom), each read by a function that gives its value or throws what is wrong with it.
type Column<T> = (value: unknown) => T;

/** What is wrong with a device's value, and where in its row (said as "<column>.<index> <problem>" in the PeerError). */
class Unfit extends Error {
  readonly at: string[];
  constructor(problem: string, at: string[] = []) {
    super(problem);
    this.at = at;
  }
}

/** A string atom, at most DEVICE_LIMITS.text UTF-16 units. */
const text: Column<string> = (v) => {
  if (typeof v !== "string") throw new Unfit("must be a string");
  if (v.length > DEVICE_LIMITS.text) throw new Unfit(`must be at most ${DEVICE_LIMITS.text} characters`);
  return v;
};

/** A uuid atom (["uuid", "<id>"]): its id, at most 64 characters. */
const uuidAtom: Column<string> = (v) => {
  if (!Array.isArray(v) || v.length !== 2 || v[0] !== "uuid" || typeof v[1] !== "string" || v[1].length > 64) throw new Unfit('must be a uuid atom (["uuid", id], an id of at most 64 characters)');
  return v[1];
};

/** A set of at most `max` members (or one bare member). */
const setOf =
  <T>(member: Column<T>, max: number): Column<T[]> =>
  (v) => {
    if (!Array.isArray(v) || v[0] !== "set") return [member(v)];
    const members: unknown = v[1];
    if (v.length !== 2 || !Array.isArray(members)) throw new Unfit('must be a set (["set", [members]])');
    if (members.length > max) throw new Unfit(`must be a set of at most ${max} members`);
    return members.map((m, i) => {
      try {
        return member(m);
      } catch (err) {
        throw err instanceof Unfit ? new Unfit(err.message, [String(i)]) : err;
      }
    });
  };

type Row<C> = { [K in keyof C]?: C[K] extends Column<infer T> ? T : never };

/** A row's kept columns, read by their columns' functions (a column the row lacks stays out; others are dropped). */
function rowOf<C extends Record<string, Column<unknown>>>(columns: C, raw: unknown): Row<C> {
  if (!isRecord(raw)) throw new Unfit("must be an object");
  const row: Record<string, unknown> = {};
  for (const [name, read] of Object.entries(columns)) {
    if (!Object.hasOwn(raw, name)) continue;
    try {
      row[name] = read(raw[name]);
    } catch (err) {
      throw err instanceof Unfit ? new Unfit(err.message, [name, ...err.at]) : err;
    }
  }
  return row as Row<C>;
}

const SWITCH_COLUMNS = {
  name: text,
  description: text,
  management_ips: setOf(text, DEVICE_LIMITS.addresses),
  tunnel_ips: setOf(text, DEVICE_LIMITS.addresses),
  ports: setOf(uuidAtom, DEVICE_LIMITS.ports),
};
const PORT_COLUMNS = { name: text, description: text };
type SwitchRow = Row<typeof SWITCH_COLUMNS>;
type PortRow = Row<typeof PORT_COLUMNS>;

/** The bytes a kept row counts against the device's budget: its text, as stored. */
function bytesOf(row: SwitchRow | PortRow): number {
  let n = Buffer.byteLength(row.name ?? "") + Buffer.byteLength(row.description ?? "");
  if ("management_ips" in row) for (const a of row.management_ips ?? []) n += Buffer.byteLength(a);
  if ("tunnel_ips" in row) for (const a of row.tunnel_ips ?? []) n += Buffer.byteLength(a);
  return n;
}

const KEPT = { Physical_Switch: SWITCH_COLUMNS, Physical_Port: PORT_COLUMNS } as const;
const KEPT_TABLES: readonly (keyof typeof KEPT)[] = ["Physical_Switch", "Physical_Port"];
const LIMIT: Record<keyof typeof KEPT, number> = { Physical_Switch: DEVICE_LIMITS.switches, Physical_Port: DEVICE_LIMITS.ports };

/** What the monitor asks for: exactly the tables and columns kept. */
export const MONITORED = {
  Physical_Switch: { columns: Object.keys(SWITCH_COLUMNS) },
  Physical_Port: { columns: Object.keys(PORT_COLUMNS) },
};

/**
 * The second monitor, of the MACs the device learns: nothing is kept of it; an update only says a
 * reconcile is due (sessions.ts coalesces them). No initial rows: every new session is reconciled
 * in full anyway.
 */
export const LEARNED_MONITOR = "vnm-learned";
export const MONITORED_LEARNED = {
  Ucast_Macs_Local: { columns: ["MAC", "ipaddr", "logical_switch"], select: { initial: false, insert: true, delete: true, modify: true } },
};

/** The rows kept of one device. */
export class DeviceTables {
  readonly switches = new Map<string, SwitchRow>();
  readonly ports = new Map<string, PortRow>();
  private readonly budget: number;
  /** The bytes kept (bytesOf every row). */
  private kept = 0;

  /** `budget`: the bytes this device's rows may hold (VNM_VTEP_STATE_BUDGET_BYTES). */
  constructor(budget = DEFAULT_STATE_BUDGET) {
    this.budget = budget;
  }

  get bytes(): number {
    return this.kept;
  }

  /** Applies a monitor's table-updates ({table: {uuid: {old, new}}}); a PeerError when they are not that, too many, or over the budget. */
  apply(updates: unknown): void {
    if (!isRecord(updates)) throw new PeerError("bad_message", `table-updates that are not an object: ${excerpt(updates)}`);
    for (const table of KEPT_TABLES) {
      const rows = updates[table];
      if (rows === undefined) continue;
      if (!isRecord(rows)) throw new PeerError("bad_message", `${table} updates that are not an object`);
      const uuids = Object.keys(rows);
      if (uuids.length > LIMIT[table]) throw new PeerError("too_many_rows", `more than ${LIMIT[table]} ${table} rows in one update`);
      const kept: Map<string, SwitchRow | PortRow> = table === "Physical_Switch" ? this.switches : this.ports;
      for (const uuid of uuids) {
        const change = rows[uuid];
        if (!isRecord(change)) throw new PeerError("bad_message", `a ${table} row update that is not an object`);
        const next = change["new"];
        const was = kept.get(uuid);
        if (was) this.kept -= bytesOf(was);
        if (next === undefined) {
          kept.delete(uuid);
          continue;
        }
        let row: SwitchRow | PortRow;
        try {
          row = rowOf(KEPT[table], next);
        } catch (err) {
          if (!(err instanceof Unfit)) throw err;
          throw new PeerError("bad_message", `${table} row ${excerpt(uuid, 64)}: ${err.at.join(".") || "row"} ${err.message}`);
        }
        kept.set(uuid, row);
        this.kept += bytesOf(row);
      }
      if (kept.size > LIMIT[table]) throw new PeerError("too_many_rows", `more than ${LIMIT[table]} ${table} rows`);
    }
    if (this.kept > this.budget) throw new PeerError("over_budget", `its state is over its budget of ${this.budget} bytes (VNM_VTEP_STATE_BUDGET_BYTES): ${this.kept} bytes of names, descriptions and addresses`);
  }

  /** Whether a switch's management_ips hold `ip`. */
  hasSwitch(ip: string): boolean {
    for (const r of this.switches.values()) if (r.management_ips?.some((m) => sameIp(m, ip))) return true;
    return false;
  }

  /** What the tables say of the VTEP at `ip`. */
  stateOf(ip: string): DeviceState {
    let sw: SwitchRow | undefined;
    for (const r of this.switches.values()) if (r.management_ips?.some((m) => sameIp(m, ip))) sw = r;
    if (!sw) return unreachable("error", `the device has no Physical_Switch whose management_ips hold ${ip}`);
    const ports = new Map<string, string>();
    for (const u of sw.ports ?? []) {
      const p = this.ports.get(u);
      const name = p?.name ?? "";
      if (p && !ports.has(name)) ports.set(name, p.description ?? "");
    }
    return { connectionState: "connected", name: sw.name ?? "", description: sw.description ?? "", tunnelIps: [...(sw.tunnel_ips ?? [])].sort(), connectionError: null, ports };
  }
}

const sameIp = (a: string, b: string) => a === b || (a.includes(":") && canonicalIpv6(a) === canonicalIpv6(b));

export interface SessionHooks {
  /** The device's state may have changed: read `state()` when ready to store it. */
  changed: () => void;
  /** The device's learned MACs (Ucast_Macs_Local) changed: a reconcile is due (vxgw.ts reads them). */
  learned?: () => void;
  /** The session ended on the peer's account (a metric counts these). */
  fault?: (reason: PeerFault) => void;
  /** A new session is monitoring the device (vxgw.ts reconciles it in full). */
  connected?: () => void;
}

export class DeviceSession {
  private client: OvsdbClient | undefined;
  private tables: DeviceTables | undefined;
  private phase: ConnectionState = "disconnected";
  /** Why the phase is `error`. */
  private why: string | null = null;
  private stopped = false;
  private attempt = 0;
  private retry: NodeJS.Timeout | undefined;
  private readonly vtep: VtepAddress;
  private readonly hooks: SessionHooks;
  private readonly log: Logger;
  private readonly refusal: string | undefined;
  private readonly budget: number;

  /**
   * `refusal`: why the address may not be reached (the address policy); then the session stays in
   * `error`. `budget`: the bytes of state the device may have kept (VNM_VTEP_STATE_BUDGET_BYTES).
   */
  constructor(vtep: VtepAddress, hooks: SessionHooks, log: Logger, refusal?: string, budget = DEFAULT_STATE_BUDGET) {
    this.vtep = vtep;
    this.hooks = hooks;
    this.log = log.child({ vtep: vtep.id, device: `${vtep.ip.includes(":") ? `[${vtep.ip}]` : vtep.ip}:${vtep.port}` });
    this.refusal = refusal;
    this.budget = budget;
  }

  start(): void {
    if (this.refusal) {
      this.log.warn(`VTEP not contacted: ${this.refusal}`);
      this.phase = "error";
      this.why = `not contacted: ${this.refusal}`;
      this.hooks.changed();
      return;
    }
    this.run(() => this.connect());
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.client?.close();
  }

  get connectionState(): ConnectionState {
    return this.phase;
  }

  /** One OVSDB transaction on the hardware_vtep database of the current session (throws when there is none). */
  async transact(ops: Record<string, unknown>[]): Promise<unknown[]> {
    const client = this.client;
    if (this.phase !== "connected" || !client) throw new Error("the device is not connected");
    let results: unknown;
    try {
      results = await client.request("transact", ["hardware_vtep", ...ops], ANSWER_TIMEOUT_MS);
    } catch (err) {
      if (client.isClosed) throw err;
      // A device that answers too slowly, or answers an error to the whole request, costs this
      // session (the VTEP's connectionError says why), never more.
      const why = /no answer/.test(messageOf(err)) ? new PeerError("no_answer", messageOf(err)) : new PeerError("refused_write", `the device refused a transaction: ${messageOf(err)}`);
      client.close(why);
      throw why;
    }
    if (!Array.isArray(results)) {
      const why = new PeerError("bad_message", `transact answered ${excerpt(results, 100)}`);
      client.close(why);
      throw why;
    }
    // An operation it refused (RFC 7047 5.2: an error object in its place, or one more after
    // them when the commit failed, such as a constraint violation): the session ends in error.
    const refused = results.find((r): r is { error: unknown; details?: unknown } => isRecord(r) && "error" in r && r["error"] !== null);
    if (refused) {
      const why = new PeerError("refused_write", `the device refused a transaction: ${excerpt(refused.error, 200)}${refused.details ? ` (${excerpt(refused.details, 600)})` : ""}`);
      client.close(why);
      throw why;
    }
    return results;
  }

  /** The device's state as last seen. */
  state(): DeviceState {
    if (this.phase !== "connected" || !this.tables) return unreachable(this.phase === "connected" ? "error" : this.phase, this.why);
    return this.tables.stateOf(this.vtep.ip);
  }

  /** Runs a step of the session; whatever it throws ends this session and never the process. */
  private run(step: () => Promise<void> | void): void {
    try {
      Promise.resolve(step()).catch((err: unknown) => this.unexpected(err));
    } catch (err) {
      this.unexpected(err);
    }
  }

  private unexpected(err: unknown): void {
    this.log.error("VTEP session failed unexpectedly; dropped, to be tried again", { err: err instanceof Error ? err : String(err) });
    this.hooks.fault?.("internal");
    const client = this.client;
    this.client = undefined;
    client?.close();
    this.settle("error", `the session failed unexpectedly: ${messageOf(err)}`);
  }

  /** Records the state and, unless stopped, tries again after the back-off. */
  private settle(state: "disconnected" | "error", why: string | null = null): void {
    this.tables = undefined;
    this.phase = state;
    this.why = state === "error" ? why : null;
    try {
      this.hooks.changed();
    } catch (err) {
      this.log.error("VTEP state could not be reported", { err });
    }
    if (this.stopped) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => this.run(() => this.connect()), backoff(this.attempt++));
  }

  /** A session ended: why, said once in the log and the metric, then the state it leaves. */
  private ended(err: Error | undefined, wasConnected: boolean): void {
    if (err instanceof PeerError) {
      this.log.warn(`VTEP session dropped: ${err.message}`, { reason: err.reason });
      this.hooks.fault?.(err.reason);
      this.settle("error", `session dropped: ${err.message} (${err.reason})`);
      return;
    }
    if (wasConnected) this.log.warn("VTEP session lost; reconnecting", { err: err?.message });
    this.settle("disconnected");
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    let client: OvsdbClient;
    try {
      client = await OvsdbClient.connect(this.vtep.ip, this.vtep.port, CONNECT_TIMEOUT_MS);
    } catch {
      if (this.phase !== "disconnected") this.log.info("VTEP unreachable; retrying with back-off");
      return this.settle("disconnected");
    }
    if (this.stopped) return client.close();
    this.client = client;
    const openedAt = Date.now();
    // Once monitoring, a lost session is reported here; before, watch() fails and says why.
    let monitoring = false;
    client.onClose((err) => {
      if (!monitoring || this.client !== client) return;
      this.client = undefined;
      if (Date.now() - openedAt >= STABLE_MS) this.attempt = 0;
      this.run(() => this.ended(err, true));
    });
    try {
      await this.watch(client, () => {
        monitoring = true;
      });
    } catch (err) {
      if (monitoring) throw err;
      this.client = undefined;
      const why = err instanceof PeerError ? err : new PeerError(/no answer/.test(messageOf(err)) ? "no_answer" : "not_vtep", `not this VTEP's OVSDB: ${messageOf(err)}`);
      client.close(why);
      this.ended(why, false);
    }
  }

  /** list_dbs, then a monitor of the switch and its ports; every update kept, `changed` called. */
  private async watch(client: OvsdbClient, onMonitoring: () => void): Promise<void> {
    const dbs = await client.request("list_dbs", [], ANSWER_TIMEOUT_MS);
    if (!Array.isArray(dbs) || !dbs.includes("hardware_vtep")) throw new PeerError("not_vtep", `no hardware_vtep database (list_dbs answered ${excerpt(dbs, 100)})`);
    const tables = new DeviceTables(this.budget);
    client.onUpdate((params) => {
      if (params[0] === LEARNED_MONITOR) {
        if (this.tables === tables) this.hooks.learned?.();
        return;
      }
      const switches = isRecord(params[1]) && params[1]["Physical_Switch"] !== undefined;
      const had = switches && tables.hasSwitch(this.vtep.ip);
      tables.apply(params[1]);
      if (this.tables !== tables) return;
      this.hooks.changed();
      // The VTEP's switch just appeared (a device restarted empty, set up again): reconciled in full now.
      if (switches && !had && tables.hasSwitch(this.vtep.ip)) this.hooks.connected?.();
    });
    tables.apply(await client.request("monitor", ["hardware_vtep", "vnm", MONITORED], ANSWER_TIMEOUT_MS));
    if (client.isClosed) throw new PeerError("bad_message", "the session ended during the monitor");
    onMonitoring();
    // The learned MACs' monitor: a device that refuses it (an older schema) or never answers it
    // is still served, its learned MACs read by the periodic reconcile only.
    client.request("monitor", ["hardware_vtep", LEARNED_MONITOR, MONITORED_LEARNED], ANSWER_TIMEOUT_MS).catch((err: unknown) => {
      if (!client.isClosed) this.log.info("VTEP's learned MACs not monitored; read at each periodic reconcile", { err: messageOf(err) });
    });
    client.startKeepalive(ECHO_EVERY_MS);
    this.tables = tables;
    if (this.phase !== "connected") this.log.info("VTEP connected");
    this.phase = "connected";
    this.why = null;
    this.hooks.changed();
    this.hooks.connected?.();
  }
}
