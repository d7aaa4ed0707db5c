// `npm run hosts -- chaos`: the failover check of the hosts `npm run hosts -- up` made. A mixed
// load of writes and reads goes through every live host's gateway while the check kills each host
// in turn (and restores it), cuts each host off for 30 s (and heals it), and kills the Postgres
// primary's host in the middle of a burst of writes. The load: clients that create a bridge, read
// it elsewhere, rename it, read that elsewhere and now and then list their tenant; clients that
// build a bridge with two ports, a trace request on the bridge and a mirror to a port, then delete
// the bridge (the routing service's durable consumer deletes its ports, the policy service's the
// mirror, the tracing service's the trace: cascades that must run once each, through failovers);
// and a follower of `GET /events` at each host's gateway (hosts-feed.ts) that moves to another
// gateway when its own is gone and resumes there with Last-Event-ID, as a client would.
//
// After each step it waits until every cascade of the bridges deleted so far has completed (60 s
// at most). At the end, with every host back, it reads everything again and reports per step and
// in total:
// - acknowledged writes lost: a create answered 201 whose bridge is gone, an update answered 200
//   whose name is not the bridge's now (nor a later one's), a delete answered 204 whose bridge is
//   there;
// - writes reported failed that committed: a create, update or delete answered 5xx without "may
//   have been applied" (the kit's IN_DOUBT) that is found applied; those in doubt and those with
//   no answer (the connection broke) are counted apart, found applied or not;
// - duplicate events: two change messages in the JetStream stream with the same body (an outbox
//   row published twice), creates announced more than once, and cascade deletions announced more
//   than once (a consumer's work done twice) or never;
// - the followers: ids that did not grow (a repeat), events of the check's items in the stream a
//   follower neither heard nor was told it missed (a 410 is telling; a skip is not), and
//   acknowledged writes each follower did not hear exactly once;
// - stale reads: a read at another gateway, after a write was acknowledged, that does not show it
//   (an item GET, the tenant's list, a GET of a deleted bridge);
// - seconds until writes succeed again after the fault;
// - requests that failed at the surviving gateways.
// A write that fails (5xx, no answer) is never retried: at the end it has either committed (found)
// or not (not found), and the report counts both. Takes 10-15 minutes. `--quick`: one host killed
// and restored only; `--burst-only`: the primary's host killed mid-burst only; `--load-only`: the
// warm-up only. stdout gets the report as one JSON document; stderr the progress and a summary.
// Exit status 1 when a must (0 lost, 0 duplicates, 0 stale reads, cascades complete, followers
// whole) is not met; the 30 s goal for writes is reported, not enforced here.
import { connect, StringCodec } from "nats";
import { type Cascade, cascadeAnnouncements, cascadeLeftovers, checkFeed, Follower, type StreamEvent } from "./hosts-feed.ts";
import { gatewayUrl, HOSTS, type HostsState, hostIp, isolate, kill, pgPrimary, readState, restore, waitHostReady } from "./hosts.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const say = (msg: string) => process.stderr.write(`[chaos] ${new Date().toISOString().slice(11, 19)} ${msg}\n`);

/** How a write that was not acknowledged was answered. */
type Failure = "in-doubt" | "no-answer" | "failed";

/** A 5xx or no answer: told "may have been applied" (in doubt), told it failed, or no answer at all. */
function failureOf(answer: { status: number; json?: unknown }): Failure {
  if (answer.status === 0) return "no-answer";
  return /may have been applied/.test((answer.json as { message?: string } | undefined)?.message ?? "") ? "in-doubt" : "failed";
}

const unanswered = (status: number) => status === 0 || status >= 500;

/** What the client knows of one bridge: its acknowledged name, and names written with no answer. */
interface Known {
  id: string;
  tenant: string;
  acked: string;
  /** Names of updates that were not acknowledged (they may have committed). */
  unsure: string[];
  /** The same updates, with how each was answered. */
  failedUpdates: { name: string; how: Failure }[];
  /** Names of acknowledged updates, in order. */
  history: string[];
}

/** A cascade bridge whose delete was sent: acknowledged (204), or failed as `how`. */
interface Deletion {
  cascade: Cascade;
  how: "acked" | Failure;
  at: number;
  phase: string;
  /** Seen complete (no port, trace or mirror of it left) by a check. */
  complete: boolean;
}

interface Outcome {
  phase: string;
  op: "create" | "update" | "delete" | "child" | "read" | "list" | "check";
  host: number;
  start: number;
  end: number;
  ok: boolean;
  status: number;
}

const WRITES = new Set<Outcome["op"]>(["create", "update", "delete", "child"]);

interface Phase {
  name: string;
  victim?: number;
  t0: number;
  t1: number;
  cascades?: CascadeCheck;
}

interface CascadeCheck {
  /** Deleted bridges whose cascade was checked (every one acknowledged deleted by then and not yet seen complete). */
  checked: number;
  /** Of them, with a port, trace or mirror still there after the wait. */
  incomplete: number;
  /** How long the check waited for the last of them. */
  waitedSeconds: number;
}

/** How long a step's check waits for the cascades to complete; at the end, twice that. */
const CASCADE_WAIT_MS = 60_000;

class Load {
  readonly live = new Set<number>(HOSTS);
  readonly outcomes: Outcome[] = [];
  readonly known = new Map<string, Known>();
  /** Creates not acknowledged: name → tenant, and how each was answered. */
  readonly unsureCreates = new Map<string, { tenant: string; how: Failure }>();
  readonly deletions: Deletion[] = [];
  /** Every write answered 2xx, as the event it makes on the bus. */
  readonly acknowledged: { event: string; id: string }[] = [];
  /** Ids of the items the check made whose messages carry no tenant of the check's (traces, mirrors). */
  readonly itemIds = new Set<string>();
  readonly stale: { phase: string; what: string }[] = [];
  phase = "warm-up";
  private stopped = false;
  private token = "";
  private readonly state: HostsState;
  private seq = 0;
  private bursts = 0;
  /** This run's mark in names and tenants: runs against the same hosts never meet. */
  readonly run = Date.now().toString(36);
  readonly cascadeTenant = `chaos-${this.run}-cascade`;

  constructor(state: HostsState) {
    this.state = state;
  }

  currentToken(): string {
    return this.token;
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

  pick(not?: number): number {
    const hosts = [...this.live].filter((h) => h !== not);
    const from = hosts.length > 0 ? hosts : [...this.live];
    return from[Math.floor(Math.random() * from.length)] ?? 1;
  }

  async request(op: Outcome["op"], host: number, method: string, path: string, body?: unknown): Promise<{ status: number; json?: unknown }> {
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
        const k: Known = { id, tenant, acked: name, unsure: [], failedUpdates: [], history: [name] };
        this.known.set(id, k);
        this.acknowledged.push({ event: "created", id });
        mine.push(k);
        await this.checkItem(k, at);
        const v2 = `${name}-v2`;
        const at2 = this.pick();
        const updated = await this.request("update", at2, "PUT", `/bridges/${id}`, { name: v2, tenantId: tenant });
        if (updated.status === 200) {
          k.acked = v2;
          k.history.push(v2);
          this.acknowledged.push({ event: "updated", id });
          await this.checkItem(k, at2);
        } else if (unanswered(updated.status)) {
          k.unsure.push(v2);
          k.failedUpdates.push({ name: v2, how: failureOf(updated) });
        }
      } else if (unanswered(created.status)) this.unsure(name, tenant, created);
      if (this.seq % 5 === 0) await this.checkList(tenant, mine);
      if (unanswered(created.status)) await sleep(200);
      if (created.status === 429) await sleep(1_000);
    }
  }

  /**
   * One cascade client: a bridge with two ports, a trace request on the bridge and a mirror to its
   * first port, then the bridge deleted through a gateway and read as gone through another. The
   * bridge's ports are listed before the delete, so a port created without an answer is expected
   * gone too.
   */
  async cascader(w: number): Promise<void> {
    while (!this.stopped) {
      const name = `d-${this.run}-${w}-${++this.seq}`;
      const created = await this.request("create", this.pick(), "POST", "/bridges", { name, tenantId: this.cascadeTenant });
      if (created.status !== 201) {
        if (unanswered(created.status)) this.unsure(name, this.cascadeTenant, created);
        await sleep(created.status === 429 ? 1_000 : 200);
        continue;
      }
      const bridge = (created.json as { id: string }).id;
      this.acknowledged.push({ event: "created", id: bridge });
      const c: Cascade = { bridge, ports: [], traces: [], mirrors: [] };
      for (let i = 0; i < 2; i++) {
        const port = await this.child(`/bridges/${bridge}/ports`, {});
        if (port) c.ports.push(port);
      }
      const trace = await this.child("/traces", { name, deviceType: "BRIDGE", deviceId: bridge, condition: {} });
      if (trace) c.traces.push(trace);
      if (c.ports[0]) {
        const mirror = await this.child("/mirrors", { toPortId: c.ports[0] });
        if (mirror) c.mirrors.push(mirror);
      }
      const listed = await this.request("list", this.pick(), "GET", `/bridges/${bridge}/ports`);
      if (listed.status === 200) for (const p of listed.json as { id: string }[]) if (!c.ports.includes(p.id)) c.ports.push(p.id);
      for (const id of [...c.ports, ...c.traces, ...c.mirrors]) this.itemIds.add(id);
      const at = this.pick();
      const deleted = await this.request("delete", at, "DELETE", `/bridges/${bridge}`);
      if (deleted.status === 204) {
        this.acknowledged.push({ event: "deleted", id: bridge });
        this.deletions.push({ cascade: c, how: "acked", at: Date.now(), phase: this.phase, complete: false });
        await this.checkGone(bridge, at);
      } else if (unanswered(deleted.status)) {
        this.deletions.push({ cascade: c, how: failureOf(deleted), at: Date.now(), phase: this.phase, complete: false });
        await sleep(200);
      } else say(`delete of cascade bridge ${bridge} answered ${deleted.status}`);
    }
  }

  /** A create below or beside a cascade bridge; its id when acknowledged. */
  private async child(path: string, body: unknown): Promise<string | undefined> {
    const r = await this.request("child", this.pick(), "POST", path, body);
    if (r.status !== 201) return undefined;
    const id = (r.json as { id: string }).id;
    this.acknowledged.push({ event: "created", id });
    return id;
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

  /** A deleted bridge read at another gateway than the one that acknowledged its delete: 404. */
  private async checkGone(id: string, wroteAt: number): Promise<void> {
    const at = this.pick(wroteAt);
    const acked = Date.now();
    const r = await this.request("read", at, "GET", `/bridges/${id}`);
    if (r.status === 200) this.staleRead(`GET ${id} at host${at}, ${Date.now() - acked} ms after host${wroteAt} acknowledged its delete: 200`);
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
          this.known.set(id, { id, tenant, acked: name, unsure: [], failedUpdates: [], history: [name] });
          this.acknowledged.push({ event: "created", id });
        } else if (unanswered(r.status)) this.unsure(name, tenant, r);
      }),
    );
  }

  private unsure(name: string, tenant: string, answer: { status: number; json?: unknown }): void {
    this.unsureCreates.set(name, { tenant, how: failureOf(answer) });
  }

  /**
   * Waits until no port, trace or mirror of the cascade bridges deleted before `since` (and not
   * yet seen complete) is left, for `waitMs` at most; `extra`: deletions not acknowledged whose
   * bridge is gone (their cascades are due too).
   */
  async cascadesComplete(since: number, waitMs: number, extra: Deletion[] = []): Promise<CascadeCheck & { left: string[] }> {
    const due = [...this.deletions.filter((d) => d.how === "acked" && d.at <= since), ...extra].filter((d) => !d.complete);
    const t0 = Date.now();
    let left: string[] = [];
    while (due.some((d) => !d.complete)) {
      const lists = await Promise.all(["/ports?tenant_id=" + this.cascadeTenant, "/traces", "/mirrors"].map((p) => this.request("check", this.pick(), "GET", p)));
      if (lists.every((l) => l.status === 200)) {
        const [ports, traces, mirrors] = lists.map((l) => l.json as { id: string; deviceId?: string; toPortId?: string }[]);
        const found = cascadeLeftovers(
          due.filter((d) => !d.complete).map((d) => d.cascade),
          ports!,
          traces!,
          mirrors!,
        );
        for (const d of due) if (!found.bridges.has(d.cascade.bridge)) d.complete = true;
        left = found.items;
      }
      if (!due.some((d) => !d.complete) || Date.now() - t0 > waitMs) break;
      await sleep(2_000);
    }
    const incomplete = due.filter((d) => !d.complete).length;
    for (const l of left.slice(0, 10)) if (incomplete > 0) say(`cascade incomplete: ${l}`);
    return { checked: due.length, incomplete, waitedSeconds: Math.round((Date.now() - t0) / 100) / 10, left: incomplete > 0 ? left : [] };
  }

  stop(): void {
    this.stopped = true;
  }
}

/** Every bridge of the check's tenants, read through one gateway at the end. */
async function allBridges(load: Load, host: number): Promise<Map<string, { id: string; name: string; tenantId: string }[]>> {
  const tenants = new Set([...load.known.values()].map((k) => k.tenant).concat([...load.unsureCreates.values()].map((u) => u.tenant), [load.cascadeTenant]));
  const out = new Map<string, { id: string; name: string; tenantId: string }[]>();
  for (const t of tenants) {
    for (let attempt = 0; ; attempt++) {
      const r = await load.request("list", host, "GET", `/bridges?tenant_id=${t}`);
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

const STREAM = "VNM";
/** The kinds the check writes, directly or through a cascade. */
const KINDS = new Set(["bridge.Bridge", "routing.Port", "tracing.TraceRequest", "policy.Mirror"]);

interface RunMessage extends StreamEvent {
  tenant: string;
  body: string;
}

/** The stream's last sequence number now. */
async function streamLast(): Promise<number> {
  const nc = await connect({ servers: HOSTS.map((n) => `nats://${hostIp(n)}:4222`) });
  try {
    return (await (await nc.jetstreamManager()).streams.info(STREAM)).state.last_seq;
  } finally {
    await nc.close();
  }
}

/** The change messages of the check's kinds after `afterSeq`, in order (the stream's every subject is read: NATS 2.9 takes one filter). */
async function streamEvents(afterSeq: number): Promise<RunMessage[]> {
  const nc = await connect({ servers: HOSTS.map((n) => `nats://${hostIp(n)}:4222`) });
  try {
    const jsm = await nc.jetstreamManager();
    const last = (await jsm.streams.info(STREAM)).state.last_seq;
    const consumer = await nc.jetstream().consumers.get(STREAM, { filterSubjects: "vnm.>", opt_start_seq: afterSeq + 1 });
    const out: RunMessage[] = [];
    const sc = StringCodec();
    let seq = afterSeq;
    while (seq < last) {
      let got = 0;
      for await (const m of await consumer.fetch({ max_messages: 1_000, expires: 5_000 })) {
        got++;
        seq = m.seq;
        const parts = m.subject.split(".");
        if (parts.length !== 4 || !KINDS.has(`${parts[1]}.${parts[2]}`)) continue;
        const body = sc.decode(m.data);
        const data = JSON.parse(body) as { id: string; tenantId?: string | null };
        out.push({ seq: m.seq, event: parts[3]!, kind: `${parts[1]}.${parts[2]}`, id: data.id, tenant: data.tenantId ?? "", body });
      }
      if (got === 0) {
        say(`the stream's messages after ${seq} did not come (it held ${last}): read up to ${seq}`);
        break;
      }
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
  /** Cascade bridges acknowledged deleted in the step. */
  cascadesDeleted: number;
  /** The check after the step: every cascade of the bridges deleted so far complete (CascadeCheck). */
  cascades?: CascadeCheck;
  /** Times a follower's stream broke or fell silent (not counting moves back home), and the longest it then had none (s). */
  feedReconnects: number;
  feedSecondsWithoutStream: number;
}

function phaseReport(load: Load, followers: Follower[], p: Phase): PhaseReport {
  const inPhase = load.outcomes.filter((o) => o.phase === p.name);
  const survivors = inPhase.filter((o) => o.host !== p.victim);
  const writes = survivors.filter((o) => WRITES.has(o.op));
  // The last failed write's end at a survivor: from then on writes succeed again.
  const failed = writes.filter((o) => !o.ok);
  const until = failed.length > 0 ? Math.max(...failed.map((o) => o.end)) - p.t0 : 0;
  const outages = followers.flatMap((f) => f.outages).filter((o) => o.from >= p.t0 && o.from < (p.t1 || Infinity) && o.why !== "moved");
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
    cascadesDeleted: load.deletions.filter((d) => d.phase === p.name && d.how === "acked").length,
    ...(p.cascades ? { cascades: p.cascades } : {}),
    feedReconnects: outages.length,
    feedSecondsWithoutStream: Math.round(Math.max(0, ...outages.map((o) => (o.to ?? Date.now()) - o.from)) / 100) / 10,
  };
}

/** The steps: a warm-up, then each fault under the load; what each step cost. */
async function runPhases(load: Load, followers: Follower[], state: HostsState, args: string[]): Promise<Phase[]> {
  const quick = args.includes("--quick");
  const loadOnly = args.includes("--load-only");
  const phases: Phase[] = [];
  const phase = async (name: string, victim: number | undefined, fault: () => Promise<void>) => {
    load.phase = name;
    // Each follower starts the step at its own host's gateway (resuming there, when it was elsewhere).
    for (const f of followers) f.rehome();
    const p: Phase = { name, victim, t0: Date.now(), t1: 0 };
    say(`${name}${victim ? ` (host${victim})` : ""}`);
    await fault();
    await sleep(SETTLE_MS);
    p.cascades = await load.cascadesComplete(Date.now(), CASCADE_WAIT_MS);
    p.t1 = Date.now();
    phases.push(p);
    say(`${name}: ${JSON.stringify(phaseReport(load, followers, p))}`);
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

/** How the writes that were not acknowledged turned out, by how they were answered. */
function failuresOf(list: { how: Failure; applied: boolean }[]) {
  const of = (how: Failure) => list.filter((f) => f.how === how);
  return {
    failed: list.length,
    foundApplied: list.filter((f) => f.applied).length,
    inDoubt: of("in-doubt").length,
    inDoubtFoundApplied: of("in-doubt").filter((f) => f.applied).length,
    withoutAnswer: of("no-answer").length,
    withoutAnswerFoundApplied: of("no-answer").filter((f) => f.applied).length,
    /** Answered 5xx without "may have been applied": must never have been applied. */
    reportedFailed: of("failed").length,
    reportedFailedFoundApplied: of("failed").filter((f) => f.applied).length,
  };
}

/** Acknowledged writes not found now, writes found twice (a blind retry's mark), and how the failed writes turned out. */
async function writesNow(load: Load) {
  const bridges = await allBridges(load, 1);
  const byId = new Map([...bridges.values()].flat().map((b) => [b.id, b]));
  const lost: string[] = [];
  for (const k of load.known.values()) {
    const b = byId.get(k.id);
    // The bridge's name now is its last acknowledged one or a later write that got no answer.
    if (!b || (b.name !== k.acked && !k.unsure.includes(b.name))) lost.push(`${k.id}: ${b ? b.name : "missing"}, acknowledged ${k.acked}`);
  }
  for (const d of load.deletions) if (d.how === "acked" && byId.has(d.cascade.bridge)) lost.push(`${d.cascade.bridge}: there, its delete acknowledged`);
  const names = new Map<string, number>();
  for (const b of byId.values()) names.set(b.name, (names.get(b.name) ?? 0) + 1);
  const creates = failuresOf([...load.unsureCreates].map(([name, u]) => ({ how: u.how, applied: names.has(name) })));
  const updates = failuresOf([...load.known.values()].flatMap((k) => k.failedUpdates.map((u) => ({ how: u.how, applied: byId.get(k.id)?.name === u.name }))));
  const unacked = load.deletions.filter((d) => d.how !== "acked");
  const deletes = failuresOf(unacked.map((d) => ({ how: d.how as Failure, applied: !byId.has(d.cascade.bridge) })));
  return {
    byId,
    lost,
    duplicateWrites: [...names.values()].filter((c) => c > 1).length,
    failedWrites: { creates, updates, deletes },
    /** Deletions not acknowledged that were applied: their cascades are due too. */
    appliedDeletions: unacked.filter((d) => !byId.has(d.cascade.bridge)),
  };
}

/** The stream's messages of the check's items: repeats, creates announced twice or never, announced creates that are not there. */
function eventsNow(load: Load, events: RunMessage[], present: Map<string, unknown>) {
  const bodies = new Map<string, number>();
  for (const e of events) bodies.set(e.body, (bodies.get(e.body) ?? 0) + 1);
  const created = new Map<string, number>();
  for (const e of events) if (e.event === "created") created.set(e.id, (created.get(e.id) ?? 0) + 1);
  const deleted = new Set(events.filter((e) => e.event === "deleted").map((e) => e.id));
  const announced = new Set(events.map((e) => `${e.event} ${e.id}`));
  return {
    events: events.length,
    duplicateEvents: [...bodies.values()].reduce((a, c) => a + (c - 1), 0),
    createsAnnouncedTwice: [...created.values()].filter((c) => c > 1).length,
    acknowledgedWritesNotAnnounced: load.acknowledged.filter((a) => !announced.has(`${a.event} ${a.id}`)).length,
    announcedBridgesNotThere: events.filter((e) => e.kind === "bridge.Bridge" && e.event === "created" && !deleted.has(e.id) && !present.has(e.id)).length,
  };
}

const SETTLE_MS = 10_000;
/** How long the followers get to hear the last of the check's events at the end. */
const CATCH_UP_MS = 90_000;

/** A follower of /events at each host's gateway, each with its first stream open. */
async function startFollowers(load: Load): Promise<Follower[]> {
  const followers = HOSTS.map((n) => new Follower(n, { url: gatewayUrl, live: () => [...load.live], token: () => load.currentToken(), login: () => load.login() }));
  for (const f of followers) f.start();
  await Promise.all(followers.map((f) => f.started));
  return followers;
}

/** The followers given until each has heard the last of `events` (CATCH_UP_MS at most), then held to them. */
async function followersNow(load: Load, followers: Follower[], events: StreamEvent[]) {
  const lastSeq = Math.max(0, ...events.map((e) => e.seq));
  const until = Date.now() + CATCH_UP_MS;
  while (Date.now() < until && followers.some((f) => !f.heard.some((h) => h.seq >= lastSeq))) await sleep(500);
  await Promise.all(followers.map((f) => f.stop()));
  const each = followers.map((f) => ({
    home: `host${f.home}`,
    ...checkFeed(f.heard, f.gaps, events, load.acknowledged),
    reconnects: f.outages.filter((o) => o.why !== "moved").length,
    movedHome: f.outages.filter((o) => o.why === "moved").length,
    goneAnswers: f.gone,
    secondsWithoutStream: Math.round(Math.max(0, ...f.outages.map((o) => (o.to ?? Date.now()) - o.from)) / 100) / 10,
    refusals: f.refusals,
  }));
  const sum = (k: "repeats" | "silentGaps" | "neverHeard" | "goneAnswers" | "excused" | "acknowledgedNotHeard" | "acknowledgedHeardTwice" | "mismatched") => each.reduce((a, f) => a + f[k], 0);
  return {
    followers: each,
    repeats: sum("repeats"),
    silentGaps: sum("silentGaps"),
    neverHeard: sum("neverHeard"),
    goneAnswers: sum("goneAnswers"),
    excused: sum("excused"),
    acknowledgedNotHeard: sum("acknowledgedNotHeard"),
    acknowledgedHeardTwice: sum("acknowledgedHeardTwice"),
    mismatched: sum("mismatched"),
  };
}

/** With the load stopped and every host back: everything read again, and held to what the clients were told. */
async function finalReport(load: Load, followers: Follower[], phases: Phase[], state: HostsState, startSeq: number) {
  say("reading everything back");
  for (const n of HOSTS) await waitHostReady(n, state);
  for (const s of load.stale.slice(0, 20)) say(`stale (${s.phase}): ${s.what}`);
  const writes = await writesNow(load);
  for (const l of writes.lost.slice(0, 20)) say(`lost: ${l}`);
  const finalCascades = await load.cascadesComplete(Date.now(), 2 * CASCADE_WAIT_MS, writes.appliedDeletions);
  const prefix = `chaos-${load.run}-`;
  const events = (await streamEvents(startSeq)).filter((e) => e.tenant.startsWith(prefix) || load.itemIds.has(e.id));
  const feed = await followersNow(load, followers, events);
  const cascades = [...load.deletions.filter((d) => d.how === "acked"), ...writes.appliedDeletions].map((d) => d.cascade);
  const announcements = cascadeAnnouncements(events, cascades);
  const failedWrites = writes.failedWrites;
  return {
    phases: phases.map((p) => phaseReport(load, followers, p)),
    total: {
      requests: load.outcomes.length,
      writesAcknowledged: load.acknowledged.length,
      acknowledgedWritesLost: writes.lost.length,
      writesReportedFailedFoundApplied: failedWrites.creates.reportedFailedFoundApplied + failedWrites.updates.reportedFailedFoundApplied + failedWrites.deletes.reportedFailedFoundApplied,
      failedWrites,
      duplicateWrites: writes.duplicateWrites,
      ...eventsNow(load, events, writes.byId),
      cascades: cascades.length,
      cascadesIncompleteAfterAStep: phases.reduce((a, p) => a + (p.cascades?.incomplete ?? 0), 0),
      cascadesIncomplete: finalCascades.incomplete,
      cascadeDeletionsAnnouncedTwice: announcements.deletedTwice,
      cascadeDeletionsNotAnnounced: announcements.notAnnounced,
      feed,
      staleReads: load.stale.length,
    },
  };
}

type Total = Awaited<ReturnType<typeof finalReport>>["total"];

/** What must be 0, by name. */
function mustsOf(t: Total): [string, number][] {
  return [
    ["acknowledged writes lost", t.acknowledgedWritesLost],
    ["writes reported failed found applied", t.writesReportedFailedFoundApplied],
    ["duplicate events in the stream", t.duplicateEvents],
    ["creates announced twice", t.createsAnnouncedTwice],
    ["acknowledged writes not announced", t.acknowledgedWritesNotAnnounced],
    ["bridges made twice", t.duplicateWrites],
    ["stale reads", t.staleReads],
    ["cascades incomplete after a step", t.cascadesIncompleteAfterAStep],
    ["cascades incomplete at the end", t.cascadesIncomplete],
    ["cascade deletions announced twice", t.cascadeDeletionsAnnouncedTwice],
    ["cascade deletions not announced", t.cascadeDeletionsNotAnnounced],
    ["feed ids repeated", t.feed.repeats],
    ["feed events skipped silently", t.feed.silentGaps],
    ["feed events never heard", t.feed.neverHeard],
    ["acknowledged writes a follower did not hear", t.feed.acknowledgedNotHeard],
    ["acknowledged writes a follower heard twice", t.feed.acknowledgedHeardTwice],
    ["feed events that are not the stream's", t.feed.mismatched],
  ];
}

export async function chaos(args: string[]): Promise<void> {
  const state = readState();
  const load = new Load(state);
  await load.login();
  const startSeq = await streamLast();
  const followers = await startFollowers(load);
  say(`following /events at ${followers.map((f) => `host${f.at()}`).join(", ")} (from after ${startSeq})`);
  const workers = Number(process.env["VNM_CHAOS_WORKERS"] || 6);
  const cascaders = Number(process.env["VNM_CHAOS_CASCADES"] || 2);
  const running: Promise<void>[] = [...Array.from({ length: workers }, (_, w) => load.worker(w)), ...Array.from({ length: cascaders }, (_, w) => load.cascader(w))];
  const phases = await runPhases(load, followers, state, args);
  load.phase = "final";
  load.stop();
  await Promise.all(running);
  const report = await finalReport(load, followers, phases, state, startSeq);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const musts = mustsOf(report.total);
  summary(report.phases, report.total, musts);
  process.exitCode = musts.some(([, n]) => n > 0) ? 1 : 0;
}

/** The report in a few lines (stderr): each must, the goal per step, the followers. */
function summary(phases: PhaseReport[], t: Total, musts: [string, number][]): void {
  const n = (x: number) => x.toLocaleString("en");
  say(`summary: ${n(t.requests)} requests, ${n(t.writesAcknowledged)} writes acknowledged, ${n(t.events)} change messages of the check's items, ${n(t.cascades)} cascades`);
  for (const [what, count] of musts) say(`  ${what}: ${count}${count > 0 ? "  <- must be 0" : ""}`);
  for (const f of t.feed.followers) say(`  follower at ${f.home}: ${n(f.heard)} events heard, ${f.reconnects} reconnects, ${f.goneAnswers} answered 410 (${f.excused} events announced missed)`);
  for (const p of phases) {
    const over = p.secondsUntilWritesSucceed > 30 ? "  <- over the 30 s goal" : "";
    say(`  ${p.phase}: writes back after ${p.secondsUntilWritesSucceed} s${over}; failed at survivors ${p.failedAtSurvivors} of ${p.requestsAtSurvivors}; cascades ${p.cascades?.checked ?? 0} checked, ${p.cascades?.incomplete ?? 0} incomplete`);
  }
  const bad = musts.filter(([, c]) => c > 0).map(([w]) => w);
  say(bad.length === 0 ? "result: every must met" : `result: FAILED (${bad.join("; ")})`);
}
