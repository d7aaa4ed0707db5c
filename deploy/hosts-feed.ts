// The change feed through failovers, for the chaos check (deploy/hosts-chaos.ts): a follower of
// `GET /events` that behaves as a client does (it reconnects after a drop, at another gateway when
// its own is gone, resuming with Last-Event-ID), and the checks of what followers heard and what
// the cascades announced, against the JetStream stream read at the end. The checks are pure
// functions (e2e/test/hosts-feed.spec.ts runs them on doctored lists).

/** An event a follower heard: its id (an administrator's: the stream's sequence number), what it said, where. */
export interface Heard {
  seq: number;
  event: string;
  id: string;
  host: number;
}

/**
 * Events a follower was told it will not get: a 410 to a resume after `after` (list again), or a
 * stream started without a Last-Event-ID after one broke before its first event. Every event
 * after `after` and before the first one heard afterwards (`until`) is excused.
 */
export interface AnnouncedGap {
  after: number;
  until?: number;
  reason: "410" | "no id";
}

/** A message of the check's items in the stream. */
export interface StreamEvent {
  seq: number;
  /** created, updated or deleted */
  event: string;
  /** The item's kind as the bus names it (bridge.Bridge, routing.Port, ...). */
  kind: string;
  id: string;
}

export interface FeedCheck {
  /** Events of the check's items heard. */
  heard: number;
  /** Ids not above the one heard before them (the same event twice, or one out of order). */
  repeats: number;
  /** The check's events in the stream the follower neither heard nor was told it missed, before its last one heard. */
  silentGaps: number;
  /** The check's events in the stream after the last one the follower heard (it never caught up). */
  neverHeard: number;
  /** Events missed inside gaps the follower was told of (410). */
  excused: number;
  /** Acknowledged writes whose event the follower did not hear (and was not told it missed). */
  acknowledgedNotHeard: number;
  /** Acknowledged writes whose event the follower heard more than once. */
  acknowledgedHeardTwice: number;
  /** Events heard under an id whose stream message is another event or item. */
  mismatched: number;
}

const key = (event: string, id: string) => `${event} ${id}`;

/**
 * What one follower heard, held to the stream: `stream` holds the check's messages (and only
 * those: other messages heard are only held to the ids' order), `acknowledged` the writes the
 * load was answered 2xx for, as the event each must make.
 */
export function checkFeed(heard: Heard[], gaps: AnnouncedGap[], stream: StreamEvent[], acknowledged: { event: string; id: string }[]): FeedCheck {
  let repeats = 0;
  let top = -1;
  for (const h of heard) {
    if (h.seq <= top) repeats++;
    top = Math.max(top, h.seq);
  }
  const bySeq = new Map(stream.map((e) => [e.seq, e]));
  const ours = heard.filter((h) => bySeq.has(h.seq));
  const heardSeqs = new Set(ours.map((h) => h.seq));
  const mismatched = ours.filter((h) => {
    const e = bySeq.get(h.seq)!;
    return e.event !== h.event || e.id !== h.id;
  }).length;
  const excusedAt = (seq: number) => gaps.some((g) => seq > g.after && (g.until === undefined || seq < g.until));
  const last = ours.length > 0 ? Math.max(...ours.map((h) => h.seq)) : -1;
  let silentGaps = 0;
  let neverHeard = 0;
  let excused = 0;
  for (const e of stream) {
    if (heardSeqs.has(e.seq)) continue;
    if (excusedAt(e.seq)) excused++;
    else if (e.seq < last) silentGaps++;
    else neverHeard++;
  }
  const heardTimes = new Map<string, number>();
  for (const h of ours) heardTimes.set(key(h.event, h.id), (heardTimes.get(key(h.event, h.id)) ?? 0) + 1);
  const streamSeqs = new Map<string, number[]>();
  for (const e of stream) streamSeqs.set(key(e.event, e.id), [...(streamSeqs.get(key(e.event, e.id)) ?? []), e.seq]);
  let acknowledgedNotHeard = 0;
  let acknowledgedHeardTwice = 0;
  for (const a of acknowledged) {
    const times = heardTimes.get(key(a.event, a.id)) ?? 0;
    if (times > 1) acknowledgedHeardTwice++;
    if (times === 0 && !(streamSeqs.get(key(a.event, a.id)) ?? []).some(excusedAt)) acknowledgedNotHeard++;
  }
  return { heard: ours.length, repeats, silentGaps, neverHeard, excused, acknowledgedNotHeard, acknowledgedHeardTwice, mismatched };
}

/** A bridge deleted with what hung on it: the ports the routing service must delete, and the traces and mirrors that go with them. */
export interface Cascade {
  bridge: string;
  ports: string[];
  traces: string[];
  mirrors: string[];
}

export interface CascadeAnnouncements {
  /** Items a cascade deleted that were announced deleted more than once (a consumer's work done twice). */
  deletedTwice: number;
  /** Items of deleted bridges never announced deleted (a cascade that did not run, or ran unannounced). */
  notAnnounced: number;
}

/** How each deleted bridge's items were announced gone: once each. */
export function cascadeAnnouncements(stream: StreamEvent[], cascades: Cascade[]): CascadeAnnouncements {
  const deletes = new Map<string, number>();
  for (const e of stream) if (e.event === "deleted") deletes.set(e.id, (deletes.get(e.id) ?? 0) + 1);
  let deletedTwice = 0;
  let notAnnounced = 0;
  for (const c of cascades) {
    for (const id of [c.bridge, ...c.ports, ...c.traces, ...c.mirrors]) {
      const n = deletes.get(id) ?? 0;
      if (n > 1) deletedTwice++;
      if (n === 0) notAnnounced++;
    }
  }
  return { deletedTwice, notAnnounced };
}

/** Ports, traces and mirrors still there although their bridge (or their port) was deleted. */
export function cascadeLeftovers(
  cascades: Cascade[],
  ports: { id: string; deviceId?: string }[],
  traces: { id: string; deviceId?: string }[],
  mirrors: { id: string; toPortId?: string }[],
): { bridges: Set<string>; items: string[] } {
  const bridges = new Set(cascades.map((c) => c.bridge));
  const portsOf = new Map(cascades.flatMap((c) => c.ports.map((p) => [p, c.bridge] as const)));
  const left: [string, string][] = [
    ...ports.filter((p) => bridges.has(p.deviceId ?? "")).map((p) => [p.deviceId!, `port ${p.id}`] as [string, string]),
    ...traces.filter((t) => bridges.has(t.deviceId ?? "")).map((t) => [t.deviceId!, `trace ${t.id}`] as [string, string]),
    ...mirrors.filter((m) => portsOf.has(m.toPortId ?? "")).map((m) => [portsOf.get(m.toPortId!)!, `mirror ${m.id}`] as [string, string]),
  ];
  return { bridges: new Set(left.map(([b]) => b)), items: left.map(([b, what]) => `${what} of deleted bridge ${b}`) };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A follower says nothing between two events for longer than the gateway's keep-alive (15 s) only when its connection is dead. */
const SILENCE_MS = 20_000;
/** How long a gateway may take to answer `GET /events` with its headers. */
const HEADERS_MS = 10_000;

export interface FollowerOptions {
  /** The gateway of host n. */
  url(n: number): string;
  /** The hosts the client may try now, its own first when it is among them. */
  live(): number[];
  token(): string;
  /** A new token (the one used was refused). */
  login(): Promise<void>;
}

/**
 * One client of `GET /events` as an administrator (ids are the stream's sequence numbers). It
 * follows at its own host's gateway while that is live and at another's otherwise; a stream that
 * breaks, or falls silent for longer than the keep-alive, is given up and followed again from the
 * last id heard, as a client would (EventSource resumes the same way).
 */
export class Follower {
  readonly heard: Heard[] = [];
  readonly gaps: AnnouncedGap[] = [];
  /**
   * Each time a stream ended, and when the next one opened (undefined: none yet): it broke or
   * ended (`broke`), fell silent (`silent`), or the follower left it to go back home (`moved`).
   */
  readonly outages: { from: number; to?: number; why: "broke" | "silent" | "moved" }[] = [];
  /** Answers other than 200 to `GET /events`, by status (0: no answer). */
  readonly refusals: Record<string, number> = {};
  gone = 0;
  private lastId: number | undefined;
  private stopped = false;
  private current: { host: number; ac: AbortController; why?: "silent" | "moved" } | undefined;
  private loop: Promise<void> | undefined;
  private opened!: () => void;
  /** Resolves once the first stream is open (its headers received): every change made after that is on it. */
  readonly started = new Promise<void>((r) => {
    this.opened = r;
  });

  readonly home: number;
  private readonly opts: FollowerOptions;

  constructor(home: number, opts: FollowerOptions) {
    this.home = home;
    this.opts = opts;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Back to its own host's gateway when it is live and the follower is elsewhere (resuming there). */
  rehome(): void {
    if (this.current && this.current.host !== this.home && this.opts.live().includes(this.home)) {
      this.current.why = "moved";
      this.current.ac.abort();
    }
  }

  /** The host whose gateway the follower reads now. */
  at(): number | undefined {
    return this.current?.host;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.ac.abort();
    await this.loop;
  }

  private pick(tried: number): number {
    const live = this.opts.live();
    const order = live.includes(this.home) ? [this.home, ...live.filter((h) => h !== this.home)] : live;
    return order.length > 0 ? order[tried % order.length]! : this.home;
  }

  private async run(): Promise<void> {
    let tried = 0;
    while (!this.stopped) {
      const host = this.pick(tried);
      const current: { host: number; ac: AbortController; why?: "silent" | "moved" } = { host, ac: new AbortController() };
      this.current = current;
      const status = await this.follow(current).catch(() => 0);
      if (this.stopped) break;
      // A stream that ends starts an outage; refusals while reconnecting are part of it.
      if (status !== 200) this.refusals[String(status)] = (this.refusals[String(status)] ?? 0) + 1;
      if (status === 200) {
        tried = 0;
        this.outages.push({ from: Date.now(), why: current.why ?? "broke" });
        continue;
      }
      if (status === 410) {
        // List again, then follow without an id: what comes between is announced as missed.
        this.gone++;
        this.gaps.push({ after: this.lastId ?? -1, reason: "410" });
        this.lastId = undefined;
        continue;
      }
      if (status === 401) await this.opts.login().catch(() => {});
      tried++;
      await sleep(status === 0 ? 200 : 1_000);
    }
    this.current = undefined;
  }

  /** One stream, until it ends; its status (0: no answer). */
  private async follow(current: { host: number; ac: AbortController; why?: "silent" | "moved" }): Promise<number> {
    const { host, ac } = current;
    const giveUp = () => {
      current.why ??= "silent";
      ac.abort();
    };
    let timer = setTimeout(giveUp, HEADERS_MS);
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(giveUp, SILENCE_MS);
    };
    try {
      const headers: Record<string, string> = { "x-auth-token": this.opts.token(), accept: "text/event-stream" };
      if (this.lastId !== undefined) headers["last-event-id"] = String(this.lastId);
      else if (this.heard.length === 0 && this.outages.length > 0 && !this.gaps.some((g) => g.until === undefined)) this.gaps.push({ after: -1, reason: "no id" });
      const res = await fetch(`${this.opts.url(host)}/events`, { headers, signal: ac.signal });
      if (res.status !== 200) {
        await res.text().catch(() => "");
        return res.status;
      }
      const outage = this.outages.at(-1);
      if (outage && outage.to === undefined) outage.to = Date.now();
      this.opened();
      quiet();
      const decoder = new TextDecoder();
      let buffer = "";
      try {
        for await (const chunk of res.body ?? []) {
          quiet();
          buffer += decoder.decode(chunk as Uint8Array, { stream: true });
          for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
            const block = buffer.slice(0, i);
            buffer = buffer.slice(i + 2);
            this.take(block, host);
          }
        }
      } catch {
        // The stream broke (or was given up): the caller reconnects.
      }
      return 200;
    } finally {
      clearTimeout(timer);
    }
  }

  private take(block: string, host: number): void {
    const fields = new Map<string, string>();
    for (const line of block.split("\n")) {
      if (line.startsWith(":") || !line.includes(":")) continue;
      const at = line.indexOf(":");
      fields.set(line.slice(0, at), line.slice(at + 1).replace(/^ /, ""));
    }
    const id = fields.get("id");
    const data = fields.get("data");
    if (id === undefined || data === undefined) return;
    const seq = Number(id);
    const item = JSON.parse(data) as { id: string };
    this.heard.push({ seq, event: fields.get("event") ?? "message", id: item.id, host });
    for (const g of this.gaps) if (g.until === undefined) g.until = seq;
    this.lastId = seq;
  }
}
