// `npm run hosts -- chaos`: the failover check of the hosts `npm run hosts -- up` made. A mixed
// load of writes and reads goes through every live host's gateway while the check kills each host
// in turn (and restores it), cuts each host off for 30 s (and heals it), and kills the Postgres
// primary's host in the middle of a burst of writes. At the end, with every host back, it reads
// everything again and reports per step and in total:
// - acknowledged writes lost: a create answered 201 whose bridge is gone, or an update answered
//   200 whose name is not the bridge's now (nor a later one's);
// - duplicate events: two change messages in the JetStream stream with the same body (an outbox
//   row published twice), and creates announced more than once;
// - stale reads: a read at another gateway, after a write was acknowledged, that does not show it
//   (an item GET or the tenant's list);
// - seconds until writes succeed again after the fault;
// - requests that failed at the surviving gateways.
// A write that fails (5xx, no answer) is never retried: at the end it has either committed (found)
// or not (not found), and the report counts both. Takes 10-15 minutes. `--quick`: one host killed
// and restored only; `--burst-only`: the primary's host killed mid-burst only. The figures go to stdout as JSON too (the last line).
import { connect, StringCodec } from "nats";
import { gatewayUrl, HOSTS, type HostsState, hostIp, isolate, kill, pgPrimary, readState, restore, waitHostReady } from "./hosts.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const say = (msg: string) => process.stderr.write(`[chaos] ${new Date().toISOString().slice(11, 19)} ${msg}\n`);

/** What the client knows of one bridge: its acknowledged name, and names written with no answer. */
interface Known {
  id: string;
  tenant: string;
  acked: string;
  /** Names of updates that got no answer (they may have committed). */
  unsure: string[];
  /** Names of acknowledged updates, in order. */
  history: string[];
}

interface Outcome {
  phase: string;
  op: "create" | "update" | "read" | "list";
  host: number;
  start: number;
  end: number;
  ok: boolean;
  status: number;
}

interface Phase {
  name: string;
  victim?: number;
  t0: number;
  t1: number;
}

class Load {
  readonly live = new Set<number>(HOSTS);
  readonly outcomes: Outcome[] = [];
  readonly known = new Map<string, Known>();
  /** Creates with no answer: name → tenant. */
  readonly unsureCreates = new Map<string, string>();
  /** Creates answered 503 saying the write may have been applied (the kit's IN_DOUBT), by name. */
  readonly inDoubt = new Set<string>();
  /** Creates that got no answer at all (the connection to a gateway broke), by name. */
  readonly noAnswer = new Set<string>();
  readonly stale: { phase: string; what: string }[] = [];
  phase = "warm-up";
  private stopped = false;
  private token = "";
  private readonly state: HostsState;
  private seq = 0;
  private bursts = 0;
  /** This run's mark in names and tenants: runs against the same hosts never meet. */
  readonly run = Date.now().toString(36);

  constructor(state: HostsState) {
    this.state = state;
  }

  async login(): Promise<void> {
    const auth = Buffer.from(`${this.state.adminUser}:${this.state.adminPassword}`).toString("base64");
    for (;;) {
      for (const n of this.live) {
        const r = await fetch(`${gatewayUrl(n)}/login`, { method: "POST", headers: { authorization: `Basic ${auth}` }, signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
        if (r?.status === 200) {
          this.token = ((await r.json()) as { key: string }).key;
          return;
        }
      }
      await sleep(500);
    }
  }

  private pick(not?: number): number {
    const hosts = [...this.live].filter((h) => h !== not);
    const from = hosts.length > 0 ? hosts : [...this.live];
    return from[Math.floor(Math.random() * from.length)] ?? 1;
  }

  private async request(op: Outcome["op"], host: number, method: string, path: string, body?: unknown): Promise<{ status: number; json?: unknown }> {
    const start = Date.now();
    let status = 0;
    let json: unknown;
    try {
      const r = await fetch(`${gatewayUrl(host)}${path}`, {
        method,
        headers: { "x-auth-token": this.token, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(20_000),
      });
      status = r.status;
      const text = await r.text();
      json = text ? JSON.parse(text) : undefined;
      if (status === 401) void this.login();
    } catch {
      status = 0;
    }
    this.outcomes.push({ phase: this.phase, op, host, start, end: Date.now(), ok: status > 0 && status < 500, status });
    return { status, json };
  }

  /** One worker: create, read it elsewhere, update, read that elsewhere, now and then the tenant's list. */
  async worker(w: number): Promise<void> {
    const tenant = `chaos-${this.run}-w${w}`;
    const mine: Known[] = [];
    while (!this.stopped) {
      const name = `c-${this.run}-${w}-${++this.seq}`;
      const at = this.pick();
      const created = await this.request("create", at, "POST", "/bridges", { name, tenantId: tenant });
      if (created.status === 201) {
        const id = (created.json as { id: string }).id;
        const k: Known = { id, tenant, acked: name, unsure: [], history: [name] };
        this.known.set(id, k);
        mine.push(k);
        await this.checkItem(k, at);
        const v2 = `${name}-v2`;
        const at2 = this.pick();
        const updated = await this.request("update", at2, "PUT", `/bridges/${id}`, { name: v2, tenantId: tenant });
        if (updated.status === 200) {
          k.acked = v2;
          k.history.push(v2);
          await this.checkItem(k, at2);
        } else if (updated.status === 0 || updated.status >= 500) k.unsure.push(v2);
      } else if (created.status === 0 || created.status >= 500) this.unsure(name, tenant, created);
      if (this.seq % 5 === 0) await this.checkList(tenant, mine);
      if (created.status === 0 || created.status >= 500) await sleep(200);
      if (created.status === 429) await sleep(1_000);
    }
  }

  /** Reads the bridge at another gateway than the one that acknowledged the write. */
  private async checkItem(k: Known, wroteAt: number): Promise<void> {
    const at = this.pick(wroteAt);
    const acked = Date.now();
    const r = await this.request("read", at, "GET", `/bridges/${k.id}`);
    if (r.status !== 200 && r.status !== 404) return;
    const name = (r.json as { name?: string } | undefined)?.name;
    if (r.status !== 200 || (name !== k.acked && !k.unsure.includes(name ?? ""))) this.staleRead(`GET ${k.id} at host${at}, ${Date.now() - acked} ms after host${wroteAt} acknowledged ${k.acked}: ${r.status} ${name}`);
  }

  private staleRead(what: string): void {
    this.stale.push({ phase: this.phase, what });
    say(`stale: ${what}`);
  }

  private async checkList(tenant: string, mine: Known[]): Promise<void> {
    const expected = mine.filter((k) => k.tenant === tenant);
    const at = this.pick();
    const r = await this.request("list", at, "GET", `/bridges?tenant_id=${tenant}`);
    if (r.status !== 200) return;
    const seen = new Map((r.json as { id: string; name: string }[]).map((b) => [b.id, b.name]));
    for (const k of expected) {
      const name = seen.get(k.id);
      if (name === undefined || (name !== k.acked && !k.unsure.includes(name))) this.staleRead(`list of ${tenant} at host${at}: ${k.id} ${name ?? "missing"} after ${k.acked} was acknowledged`);
    }
  }

  /** Many creates at once (a burst), each through a live gateway. */
  async burst(count: number): Promise<void> {
    const burst = ++this.bursts;
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const tenant = `chaos-${this.run}-burst`;
        const name = `b-${this.run}-${burst}-${i}`;
        const r = await this.request("create", this.pick(), "POST", "/bridges", { name, tenantId: tenant });
        if (r.status === 201) {
          const id = (r.json as { id: string }).id;
          this.known.set(id, { id, tenant, acked: name, unsure: [], history: [name] });
        } else if (r.status === 0 || r.status >= 500) this.unsure(name, tenant, r);
      }),
    );
  }

  /** A create that failed: told "may have been applied" (in doubt), or told it failed, or no answer. */
  private unsure(name: string, tenant: string, answer: { status: number; json?: unknown }): void {
    this.unsureCreates.set(name, tenant);
    if (answer.status === 0) this.noAnswer.add(name);
    else if (/may have been applied/.test((answer.json as { message?: string } | undefined)?.message ?? "")) this.inDoubt.add(name);
  }

  stop(): void {
    this.stopped = true;
  }
}

/** Every bridge of the check's tenants, read through one gateway at the end. */
async function allBridges(load: Load, host: number): Promise<Map<string, { id: string; name: string; tenantId: string }[]>> {
  const tenants = new Set([...load.known.values()].map((k) => k.tenant).concat([...load.unsureCreates.values()]));
  const out = new Map<string, { id: string; name: string; tenantId: string }[]>();
  for (const t of tenants) {
    for (let attempt = 0; ; attempt++) {
      const r = await load["request"]("list", host, "GET", `/bridges?tenant_id=${t}`);
      if (r.status === 200) {
        out.set(t, r.json as { id: string; name: string; tenantId: string }[]);
        break;
      }
      if (attempt > 20) throw new Error(`cannot list ${t}: ${r.status}`);
      await sleep(1_000);
    }
  }
  return out;
}

/** Change messages of the bridges in the stream, read from its start. */
async function bridgeEvents(): Promise<{ seq: number; event: string; id: string; tenant: string; body: string }[]> {
  const nc = await connect({ servers: HOSTS.map((n) => `nats://${hostIp(n)}:4222`) });
  try {
    const jsm = await nc.jetstreamManager();
    const { state } = await jsm.streams.info("VNM");
    const consumer = await nc.jetstream().consumers.get("VNM", { filterSubjects: "vnm.bridge.Bridge.*", opt_start_seq: 1 });
    const out: { seq: number; event: string; id: string; tenant: string; body: string }[] = [];
    const sc = StringCodec();
    while (true) {
      const m = await consumer.next({ expires: 2_000 });
      if (!m) break;
      const body = sc.decode(m.data);
      const data = JSON.parse(body) as { id: string; event: string; tenantId: string | null };
      out.push({ seq: m.seq, event: data.event, id: data.id, tenant: data.tenantId ?? "", body });
      if (m.seq >= state.last_seq) break;
    }
    return out;
  } finally {
    await nc.close();
  }
}

interface PhaseReport {
  phase: string;
  victim?: string;
  writesAcked: number;
  /** Requests refused by the per-user rate limit (429): neither failed nor stale. */
  throttled: number;
  writesFailedAtSurvivors: number;
  requestsAtSurvivors: number;
  failedAtSurvivors: number;
  failedAtVictim: number;
  secondsUntilWritesSucceed: number;
  /** The longest a write at a survivor took to be answered (acknowledged or failed). */
  slowestWriteSeconds: number;
  staleReads: number;
  /** Failed requests at the survivors by status (0: no answer). */
  failedByStatus: Record<string, number>;
}

function phaseReport(load: Load, p: Phase): PhaseReport {
  const inPhase = load.outcomes.filter((o) => o.phase === p.name);
  const survivors = inPhase.filter((o) => o.host !== p.victim);
  const writes = survivors.filter((o) => o.op === "create" || o.op === "update");
  // The last failed write's end at a survivor: from then on writes succeed again.
  const failed = writes.filter((o) => !o.ok);
  const until = failed.length > 0 ? Math.max(...failed.map((o) => o.end)) - p.t0 : 0;
  return {
    phase: p.name,
    ...(p.victim ? { victim: `host${p.victim}` } : {}),
    writesAcked: writes.filter((o) => o.status >= 200 && o.status < 300).length,
    throttled: survivors.filter((o) => o.status === 429).length,
    writesFailedAtSurvivors: writes.filter((o) => !o.ok).length,
    requestsAtSurvivors: survivors.length,
    failedAtSurvivors: survivors.filter((o) => !o.ok).length,
    failedAtVictim: inPhase.filter((o) => o.host === p.victim && !o.ok).length,
    secondsUntilWritesSucceed: Math.max(0, Math.round(until / 100) / 10),
    slowestWriteSeconds: Math.round(Math.max(0, ...writes.map((o) => o.end - o.start)) / 100) / 10,
    staleReads: load.stale.filter((s) => s.phase === p.name).length,
    failedByStatus: Object.fromEntries(Object.entries(Object.groupBy(survivors.filter((o) => !o.ok), (o) => String(o.status))).map(([k, v]) => [k, v?.length ?? 0])),
  };
}

/** The steps: a warm-up, then each fault under the load; what each step cost. */
async function runPhases(load: Load, state: HostsState, args: string[]): Promise<Phase[]> {
  const quick = args.includes("--quick");
  const loadOnly = args.includes("--load-only");
  const phases: Phase[] = [];
  const phase = async (name: string, victim: number | undefined, fault: () => Promise<void>) => {
    load.phase = name;
    const p: Phase = { name, victim, t0: Date.now(), t1: 0 };
    say(`${name}${victim ? ` (host${victim})` : ""}`);
    await fault();
    await sleep(SETTLE_MS);
    p.t1 = Date.now();
    phases.push(p);
    say(`${name}: ${JSON.stringify(phaseReport(load, p))}`);
  };
  const killAndRestore = async (n: number) => {
    load.live.delete(n);
    await kill(n);
    await sleep(20_000);
    await restore(n, state);
    load.live.add(n);
  };
  await phase("warm-up", undefined, () => sleep(10_000));
  const burstOnly = args.includes("--burst-only");
  for (const n of loadOnly || burstOnly ? [] : quick ? [2] : HOSTS) await phase(`kill host${n}`, n, () => killAndRestore(n));
  if (quick || loadOnly) return phases;
  for (const n of burstOnly ? [] : HOSTS) {
    await phase(`isolate host${n}`, n, async () => {
      load.live.delete(n);
      await isolate(n, 30);
      await waitHostReady(n, state);
      load.live.add(n);
    });
  }
  const primary = (await pgPrimary()) ?? 1;
  await phase(`kill the Postgres primary's host (host${primary}) mid-burst`, primary, async () => {
    // Its gateway still takes the burst's first writes: the host dies under them.
    const burst = load.burst(60);
    await sleep(150);
    await kill(primary);
    load.live.delete(primary);
    await burst;
    await load.burst(60);
    await sleep(20_000);
    await restore(primary, state);
    load.live.add(primary);
  });
  return phases;
}

/** Acknowledged writes not found now, and writes found twice (a blind retry's mark). */
async function writesNow(load: Load) {
  const bridges = await allBridges(load, 1);
  const byId = new Map([...bridges.values()].flat().map((b) => [b.id, b]));
  const lost: string[] = [];
  for (const k of load.known.values()) {
    const b = byId.get(k.id);
    // The bridge's name now is its last acknowledged one or a later write that got no answer.
    if (!b || (b.name !== k.acked && !k.unsure.includes(b.name))) lost.push(`${k.id}: ${b ? b.name : "missing"}, acknowledged ${k.acked}`);
  }
  const names = new Map<string, number>();
  for (const b of byId.values()) names.set(b.name, (names.get(b.name) ?? 0) + 1);
  return {
    byId,
    lost,
    duplicateWrites: [...names.values()].filter((c) => c > 1).length,
    unsureFound: [...load.unsureCreates.keys()].filter((n) => names.has(n)).length,
    inDoubtFound: [...load.inDoubt].filter((n) => names.has(n)).length,
    noAnswerFound: [...load.noAnswer].filter((n) => names.has(n)).length,
    // A create answered 5xx without "may have been applied" that committed all the same: must be none.
    failedFound: [...load.unsureCreates.keys()].filter((n) => !load.inDoubt.has(n) && !load.noAnswer.has(n) && names.has(n)).length,
  };
}

/** The stream's messages of this run's bridges: repeats, creates announced twice or never, announced creates that are not there. */
async function eventsNow(load: Load, present: Map<string, unknown>) {
  const events = (await bridgeEvents()).filter((e) => e.tenant.startsWith(`chaos-${load.run}-`));
  const bodies = new Map<string, number>();
  for (const e of events) bodies.set(e.body, (bodies.get(e.body) ?? 0) + 1);
  const created = new Map<string, number>();
  for (const e of events) if (e.event === "created") created.set(e.id, (created.get(e.id) ?? 0) + 1);
  return {
    events: events.length,
    duplicateEvents: [...bodies.values()].reduce((a, c) => a + (c - 1), 0),
    createsAnnouncedTwice: [...created.values()].filter((c) => c > 1).length,
    acknowledgedCreatesNotAnnounced: [...load.known.keys()].filter((id) => !created.has(id)).length,
    announcedCreatesNotThere: [...created.keys()].filter((id) => !present.has(id)).length,
    feedIdsGrow: events.every((e, i) => i === 0 || e.seq > events[i - 1]!.seq),
  };
}

const SETTLE_MS = 10_000;

export async function chaos(args: string[]): Promise<void> {
  const state = readState();
  const load = new Load(state);
  await load.login();
  const workers = Number(process.env["VNM_CHAOS_WORKERS"] || 6);
  const running: Promise<void>[] = Array.from({ length: workers }, (_, w) => load.worker(w));
  const phases = await runPhases(load, state, args);
  load.phase = "final";
  load.stop();
  await Promise.all(running);
  say("reading everything back");
  for (const n of HOSTS) await waitHostReady(n, state);
  for (const s of load.stale.slice(0, 20)) say(`stale (${s.phase}): ${s.what}`);
  const writes = await writesNow(load);
  for (const l of writes.lost.slice(0, 20)) say(`lost: ${l}`);
  const events = await eventsNow(load, writes.byId);
  const report = {
    phases: phases.map((p) => phaseReport(load, p)),
    total: {
      requests: load.outcomes.length,
      writesAcknowledged: load.known.size + [...load.known.values()].reduce((a, k) => a + k.history.length - 1, 0),
      acknowledgedWritesLost: writes.lost.length,
      writesFailed: load.unsureCreates.size + [...load.known.values()].reduce((a, k) => a + k.unsure.length, 0),
      failedCreates: load.unsureCreates.size,
      failedCreatesFoundCommitted: writes.unsureFound,
      inDoubtCreates: load.inDoubt.size,
      inDoubtCreatesFoundCommitted: writes.inDoubtFound,
      createsReportedFailedFoundCommitted: writes.failedFound,
      createsWithoutAnswer: load.noAnswer.size,
      createsWithoutAnswerFoundCommitted: writes.noAnswerFound,
      duplicateWrites: writes.duplicateWrites,
      ...events,
      staleReads: load.stale.length,
    },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const t = report.total;
  const bad = t.acknowledgedWritesLost + t.createsReportedFailedFoundCommitted + t.duplicateEvents + t.createsAnnouncedTwice + t.acknowledgedCreatesNotAnnounced + t.staleReads + t.duplicateWrites > 0 || !t.feedIdsGrow;
  process.exitCode = bad ? 1 : 0;
}
