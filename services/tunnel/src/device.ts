// One VTEP's OVSDB session: connect, check it is a hardware VTEP, monitor its physical switch
// and ports, and report what it finds whenever it changes. `connected` while the session is up
// and the switch whose management_ips hold the VTEP's address is there; `disconnected` while
// the device cannot be reached (reconnecting with capped exponential back-off and jitter);
// `error` when something answers but not as that VTEP.
import { canonicalIpv6, type Logger } from "@vnm/kit";
import { OvsdbClient, setMembers, uuidOf } from "./ovsdb.ts";

export interface DeviceState {
  connectionState: "connected" | "disconnected" | "error";
  name: string | null;
  description: string | null;
  tunnelIps: string[];
  ports: { name: string; description: string }[];
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

const unreachable = (connectionState: "disconnected" | "error"): DeviceState => ({ connectionState, name: null, description: null, tunnelIps: [], ports: [] });

/** Delay before the n-th retry: doubling from 250 ms up to 5 s, then a random half to the full step. */
export function backoff(attempt: number): number {
  const step = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  return Math.round(step / 2 + Math.random() * (step / 2));
}

type Rows = Map<string, Record<string, unknown>>;

/** Applies a monitor's table-updates ({table: {uuid: {old, new}}}) to the rows kept. */
function apply(tables: Map<string, Rows>, updates: unknown): void {
  for (const [table, rows] of Object.entries((updates ?? {}) as Record<string, Record<string, { new?: Record<string, unknown> }>>)) {
    const kept = tables.get(table) ?? new Map<string, Record<string, unknown>>();
    tables.set(table, kept);
    for (const [uuid, change] of Object.entries(rows)) {
      if (change.new) kept.set(uuid, change.new);
      else kept.delete(uuid);
    }
  }
}

const sameIp = (a: string, b: string) => a === b || (a.includes(":") && canonicalIpv6(a) === canonicalIpv6(b));

/** What the monitored tables say of the VTEP at `ip`. */
function stateOf(tables: Map<string, Rows>, ip: string): DeviceState {
  const sw = [...(tables.get("Physical_Switch")?.values() ?? [])].find((r) => setMembers(r["management_ips"]).some((m) => typeof m === "string" && sameIp(m, ip)));
  if (!sw) return unreachable("error");
  const ports = tables.get("Physical_Port") ?? new Map();
  const own = setMembers(sw["ports"]).map(uuidOf).filter((u): u is string => !!u && ports.has(u));
  return {
    connectionState: "connected",
    name: String(sw["name"] ?? ""),
    description: String(sw["description"] ?? ""),
    tunnelIps: setMembers(sw["tunnel_ips"]).map(String).sort(),
    ports: own.map((u) => ({ name: String(ports.get(u)!["name"] ?? ""), description: String(ports.get(u)!["description"] ?? "") })).sort((a, b) => a.name.localeCompare(b.name)),
  };
}

const MONITORED = {
  Physical_Switch: { columns: ["name", "description", "management_ips", "tunnel_ips", "ports"] },
  Physical_Port: { columns: ["name", "description"] },
};

export class DeviceSession {
  private client: OvsdbClient | undefined;
  private stopped = false;
  private attempt = 0;
  private retry: NodeJS.Timeout | undefined;
  private readonly vtep: VtepAddress;
  private readonly report: (s: DeviceState) => void;
  private readonly log: Logger;

  constructor(vtep: VtepAddress, report: (s: DeviceState) => void, log: Logger) {
    this.vtep = vtep;
    this.report = report;
    this.log = log;
  }

  start(): void {
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.client?.close();
  }

  private later(state: DeviceState): void {
    this.report(state);
    if (this.stopped) return;
    this.retry = setTimeout(() => void this.connect(), backoff(this.attempt++));
  }

  private async connect(): Promise<void> {
    let client: OvsdbClient;
    try {
      client = await OvsdbClient.connect(this.vtep.ip, this.vtep.port, CONNECT_TIMEOUT_MS);
    } catch {
      return this.later(unreachable("disconnected"));
    }
    if (this.stopped) return client.close();
    this.client = client;
    // Once it answered, a lost session means the device went away: disconnected, then retry.
    let answered = false;
    client.onClose(() => {
      if (answered) this.later(unreachable("disconnected"));
    });
    try {
      await this.watch(client, () => {
        answered = true;
      });
    } catch (err) {
      this.log.debug("not a VTEP", { vtep: this.vtep.id, err: (err as Error).message });
      answered = false;
      client.close();
      this.later(unreachable("error"));
    }
  }

  /** list_dbs, then a monitor of the switch and its ports; reports every change. */
  private async watch(client: OvsdbClient, onAnswer: () => void): Promise<void> {
    const dbs = await client.request("list_dbs", [], ANSWER_TIMEOUT_MS);
    if (!Array.isArray(dbs) || !dbs.includes("hardware_vtep")) throw new Error("no hardware_vtep database");
    const tables = new Map<string, Rows>();
    client.onUpdate((params) => {
      apply(tables, params[1]);
      this.report(stateOf(tables, this.vtep.ip));
    });
    apply(tables, await client.request("monitor", ["hardware_vtep", "vnm", MONITORED], ANSWER_TIMEOUT_MS));
    onAnswer();
    this.attempt = 0;
    client.startKeepalive(ECHO_EVERY_MS);
    this.report(stateOf(tables, this.vtep.ip));
  }
}
