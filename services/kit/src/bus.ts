// The change bus. With NATS_URL: NATS JetStream (publishes are acknowledged and deduplicated
// by message id). Without: an in-process stand-in, good for a single-machine run only.
import { AckPolicy, connect, DeliverPolicy, headers as natsHeaders, type ConsumerMessages, type JetStreamClient, type JsMsg, nanos, type NatsConnection, RetentionPolicy, StringCodec } from "nats";
import { type Kept, RING_SIZE, Tail } from "./bus-tail.ts";
import { feedSubjects } from "./changes.ts";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "./log.ts";
import { isJsonObject } from "./json.ts";
import { isUuid } from "./validate.ts";
import { messageOf, stringMember } from "./values.ts";

export interface BusMessage {
  subject: string;
  /** The JSON payload (null for one that is not JSON); a subscriber's message decodes it when first read. */
  readonly data: unknown;
}

/** The item a change message announces: its body's `id`, a UUID in lower case; none when it holds no such id. */
export function announcedId(msg: BusMessage): string | undefined {
  const id = isJsonObject(msg.data) ? msg.data["id"] : undefined;
  return isUuid(id) ? id.toLowerCase() : undefined;
}

/** The UUIDs a batch of change messages announces, each once, in order (consumeBatches). */
export function announcedIds(msgs: BusMessage[]): string[] {
  return [...new Set(msgs.flatMap((m) => announcedId(m) ?? []))];
}

export type BusState = "connected" | "disconnected";

export interface Bus {
  readonly kind: "nats" | "local";
  /** Subject prefix shared by every publisher and subscriber of one deployment. */
  readonly prefix: string;
  /** Publishes and waits for the broker's acknowledgement; a retry with the same id is dropped. */
  publish(subject: string, data: unknown, msgId: string): Promise<void>;
  /**
   * Receives the messages on `subjects` (below `<prefix>.`, NATS wildcards allowed: `[">"]` is
   * every change) as they are published, none missed while connected and none kept for later;
   * `onState` hears connection changes. The broker filters: a subscriber hears nothing of the
   * subjects it did not name.
   */
  subscribe(subjects: string[], handler: (msg: BusMessage) => void, onState?: (state: BusState) => void): void;
  state(): BusState;
  /**
   * Delivers every message below `<prefix>.` with its sequence number, in order: those after
   * `afterSeq` first when it is given (resuming a feed), then new ones. Returns a stop function.
   */
  follow(afterSeq: number | undefined, handler: (seq: number, msg: BusMessage) => void | Promise<void>): Promise<() => void>;
  /**
   * Which sequence numbers a feed can resume after: from `first - 1` (`first` is the oldest
   * message still kept) to `last` (the newest). Sequence numbers only grow, across restarts too.
   */
  kept(): Promise<{ first: number; last: number }>;
  /**
   * Hands every message on `subjects` (below `<prefix>.`, NATS wildcards allowed) to `handler`
   * at least once, in order, as the durable consumer `name`: what is published while this
   * process is down is handed over when it is back (with NATS; the first time from the start of
   * the stream's history), and a message whose handler fails is handed over again a second
   * later. Several replicas with one name share the work. Handlers must be idempotent.
   */
  consume(name: string, subjects: string[], handler: (msg: BusMessage) => Promise<void>): void;
  /**
   * As consume, but hands over up to CONSUME_BATCH messages at once (those already delivered,
   * never waiting for more), for a handler that handles them together, in one transaction; they
   * are acknowledged together when it resolves, and handed over again together when it fails.
   * Up to CONSUME_BATCH are under way at once across the replicas, so the messages are not
   * handled in order: only for changes whose order does not matter (deletions).
   */
  consumeBatches(name: string, subjects: string[], handler: (msgs: BusMessage[]) => Promise<void>): void;
  close(): Promise<void>;
}

/** Whether a subject matches a NATS filter ("a.*.c", "a.>"). */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length || (f[i] !== "*" && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

const REDELIVER_MS = 1_000;
/** The most messages consumeBatches hands over at once, and has under way per consumer. */
export const CONSUME_BATCH = 64;
/** Messages a follower takes at once: from the tail, or pulled by a consumer of its own. */
const FOLLOW_BATCH = 64;
/** How long a follower's batch from behind the tail waits for messages it was told exist (catchUp). */
const CATCH_UP_EXPIRES_MS = 1_000;

/** A follower's batches from behind the process's tail. */
interface CatchUp {
  next(n: number): Promise<Kept[]>;
  stop(): void;
}
/**
 * How long a change delivered to a durable consumer may go unacknowledged before it is delivered
 * again: a consumer has one change (or one batch, consumeBatches) under way at a time, so a
 * process killed while handling it (SIGKILL, a lost host) holds back every later change of
 * that consumer this long. A handler still at work says so every third of it (`working`). The
 * server's default is 30 s.
 */
const ACK_WAIT_MS = 5_000;
/** How long a batch consumer's changes given back at its close wait before they are delivered again (Delivered.giveBack). */
const GIVE_BACK_MS = 250;
/** How long closing waits for the changes being handled. */
const CLOSE_HANDLING_MS = 5_000;

const sc = StringCodec();

export interface NatsBusOptions {
  url: string;
  /** The NATS user this process connects as (VNM_NATS_USER), and its password; none: anonymous. */
  user?: string;
  password?: string;
  prefix: string;
  log: Logger;
  /** Connection name shown by the server. */
  name: string;
  /** Copies of each stream JetStream keeps (1 on one server; 3 on a cluster of three). */
  replicas?: number;
  /** The newest messages this process keeps for its followers (bus-tail.ts); RING_SIZE. */
  followRing?: number;
}

export function streamName(prefix: string): string {
  return prefix.toUpperCase().replace(/[^A-Z0-9_-]/g, "_");
}

/** Every JetStream stream a deployment's bus keeps: the changes', then the audit records'. */
export function streamNames(prefix: string): [changes: string, audit: string] {
  const name = streamName(prefix);
  return [name, `${name}_AUDIT`];
}

/**
 * The subject root of audit records (`<prefix>-audit.<domain>.<Kind>`): beside the change
 * subjects, not below them, so no change feed or cache sees them; kept in a stream of their own.
 */
export function auditRoot(prefix: string): string {
  return `${prefix}-audit`;
}

const AUDIT_DAYS = 30;

/** A message's JSON payload, or null for a foreign message on our subjects. */
function payload(decode: () => unknown): unknown {
  try {
    return decode();
  } catch {
    return null;
  }
}

/**
 * A message whose payload is decoded when a handler first reads it: most subscribers act on the
 * subject alone (a gateway's cache hears every change), and a change's JSON costs each of them
 * a decode and its garbage.
 */
function lazyMessage(subject: string, decode: () => unknown): BusMessage {
  let data: unknown;
  let decoded = false;
  return {
    subject,
    get data() {
      if (!decoded) {
        data = payload(decode);
        decoded = true;
      }
      return data;
    },
  };
}

/**
 * A NATS user's connection options: its password, and its own inbox prefix (`_INBOX_<user>`), so
 * the server can let each user receive replies on its own inboxes only (deploy/nats.conf).
 */
function credentials(opts: NatsBusOptions): { user?: string; pass?: string; inboxPrefix?: string } {
  return opts.user ? { user: opts.user, pass: opts.password, inboxPrefix: `_INBOX_${opts.user}` } : {};
}

/** A durable consumer's messages as they were delivered to this process, taken a batch at a time. */
class Delivered {
  private readonly messages: ConsumerMessages;
  private readonly it: AsyncIterator<JsMsg>;
  /** A take's look for one more message that found none yet: the next take starts with it. */
  private carried: Promise<IteratorResult<JsMsg>> | undefined;

  constructor(messages: ConsumerMessages) {
    this.messages = messages;
    this.it = messages[Symbol.asyncIterator]();
  }

  /** Waits for one message, then takes those delivered behind it (up to `max` in all); none once the messages end. */
  async take(max: number): Promise<JsMsg[]> {
    const first = await (this.carried ?? this.it.next());
    this.carried = undefined;
    return first.done ? [] : [first.value, ...(await this.waiting(max - 1))];
  }

  /** Up to `max` messages already delivered: one not there by the event loop's next turn is left for the next take. */
  private async waiting(max: number): Promise<JsMsg[]> {
    const got: JsMsg[] = [];
    while (got.length < max) {
      const next = this.carried ?? this.it.next();
      this.carried = undefined;
      const r = await Promise.race([next, new Promise<undefined>((res) => setImmediate(() => res(undefined)))]);
      if (r === undefined) this.carried = next;
      if (r === undefined || r.done) break;
      got.push(r.value);
    }
    return got;
  }

  /**
   * Gives `got` and every message delivered behind it back to the server for another instance,
   * to be delivered again after GIVE_BACK_MS (given back at once, they could come back here
   * before this instance stops pulling), and stops pulling.
   */
  async giveBack(got: JsMsg[]): Promise<void> {
    for (const m of [...got, ...(await this.waiting(Number.POSITIVE_INFINITY))]) m.nak(GIVE_BACK_MS);
    void this.carried?.then((r) => r.done || r.value.nak(GIVE_BACK_MS));
    await this.messages.close().catch(() => {});
  }
}

/**
 * A NATS connection that keeps trying in the background: the process starts and serves while
 * NATS is down, and publishes fail (to be retried by the outbox relay) until it is back.
 */
class NatsBus implements Bus {
  readonly kind = "nats";
  readonly prefix: string;
  private nc: NatsConnection | undefined;
  private js: JetStreamClient | undefined;
  private closed = false;
  /** Changes the durable consumers are handling now (close lets them finish and acknowledge). */
  private readonly handling = new Set<Promise<void>>();
  private current: BusState = "disconnected";
  private streamReady = false;
  private tailStarting: Promise<Tail> | undefined;
  /** The batch the followers behind the tail read last: the next waits for it (catchUp). */
  private catchingUp: Promise<void> = Promise.resolve();
  private readonly handlers: { subjects: string[]; handler: (msg: BusMessage) => void }[] = [];
  private readonly stateListeners: ((s: BusState) => void)[] = [];
  private readonly opts: NatsBusOptions;

  constructor(opts: NatsBusOptions) {
    this.opts = opts;
    this.prefix = opts.prefix;
    void this.run();
  }

  private setState(s: BusState): void {
    if (s === this.current) return;
    this.current = s;
    for (const l of this.stateListeners) l(s);
  }

  /** The deployment's stream: every subject below the prefix, a day of history, 2 minutes of dedup. */
  private async ensureStream(): Promise<void> {
    if (!this.nc || this.streamReady) return;
    const jsm = await this.nc.jetstreamManager();
    const [name, audit] = streamNames(this.prefix);
    const day = 24 * 3600 * 1e9;
    const streams = [
      { name, subjects: [`${this.prefix}.>`], max_age: day },
      { name: audit, subjects: [`${auditRoot(this.prefix)}.>`], max_age: AUDIT_DAYS * day },
    ];
    for (const s of streams) {
      try {
        await jsm.streams.info(s.name);
      } catch {
        await jsm.streams.add({ ...s, retention: RetentionPolicy.Limits, duplicate_window: 120 * 1e9, num_replicas: this.opts.replicas ?? 1 });
      }
    }
    this.streamReady = true;
  }

  private subscribeOne(conn: NatsConnection, sub: { subjects: string[]; handler: (msg: BusMessage) => void }): void {
    for (const subject of sub.subjects) {
      conn.subscribe(`${this.prefix}.${subject}`, {
        callback: (err, m) => {
          if (!err) sub.handler(lazyMessage(m.subject, () => JSON.parse(sc.decode(m.data))));
        },
      });
    }
  }

  private async run(): Promise<void> {
    let delay = 200;
    while (!this.closed && !this.nc) {
      try {
        // noAsyncTraces: no stack captured for every publish's acknowledgement request (an Error
        // built per write that succeeds; 4-8% of the gateway's CPU on a POST). A failed
        // publish still says what failed; callers log it with their own context.
        const conn = await connect({ servers: this.opts.url, ...credentials(this.opts), name: this.opts.name, maxReconnectAttempts: -1, reconnectTimeWait: 500, pingInterval: 5_000, maxPingOut: 2, noAsyncTraces: true });
        if (this.closed) return void (await conn.close());
        this.attach(conn);
      } catch (err) {
        this.opts.log.warn("NATS unreachable, retrying", { url: this.opts.url, err: messageOf(err) });
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 3_000);
      }
    }
  }

  private attach(conn: NatsConnection): void {
    this.nc = conn;
    this.js = conn.jetstream();
    for (const h of this.handlers) this.subscribeOne(conn, h);
    this.setState("connected");
    this.opts.log.info("connected to NATS", { url: this.opts.url });
    this.ensureStream().catch((err) => this.opts.log.warn("JetStream stream not ready", { err }));
    void (async () => {
      for await (const s of conn.status()) {
        if (s.type === "disconnect") this.setState("disconnected");
        else if (s.type === "reconnect") {
          this.setState("connected");
          this.ensureStream().catch(() => {});
        }
      }
    })().catch(() => this.setState("disconnected"));
  }

  async publish(subject: string, data: unknown, msgId: string): Promise<void> {
    if (!this.js || this.current !== "connected") throw new Error("NATS is not connected");
    if (!this.streamReady) await this.ensureStream();
    // The request that made the change, as a header too (tools read headers, not payloads).
    const requestId = stringMember(data, "requestId");
    const h = requestId === undefined ? undefined : natsHeaders();
    if (requestId !== undefined) h?.set("X-Request-Id", requestId);
    await this.js.publish(subject, sc.encode(JSON.stringify(data)), { msgID: msgId, timeout: 5_000, headers: h });
  }

  subscribe(subjects: string[], handler: (msg: BusMessage) => void, onState?: (state: BusState) => void): void {
    const sub = { subjects, handler };
    this.handlers.push(sub);
    if (onState) this.stateListeners.push(onState);
    if (this.nc) this.subscribeOne(this.nc, sub);
  }

  state(): BusState {
    return this.current;
  }

  async kept(): Promise<{ first: number; last: number }> {
    if (!this.nc) throw new Error("NATS is not connected");
    if (!this.streamReady) await this.ensureStream();
    const jsm = await this.nc.jetstreamManager();
    const { first_seq, last_seq } = (await jsm.streams.info(streamName(this.prefix))).state;
    // An empty stream that never held a message says 0 for both.
    return { first: Math.max(first_seq, 1), last: last_seq };
  }

  /**
   * From the process's tail (bus-tail.ts) while it holds the messages after the cursor; else a
   * batch at a time from a consumer of the follower's own (catchUp), and from the tail again once
   * it holds the cursor. Should the tail end (the connection closed), from that consumer alone.
   */
  async follow(afterSeq: number | undefined, handler: (seq: number, msg: BusMessage) => void | Promise<void>): Promise<() => void> {
    if (!this.js) throw new Error("NATS is not connected");
    if (!this.streamReady) await this.ensureStream();
    const tail = await this.tail();
    // Following from now: after the newest message the stream holds as the follower starts, so
    // a change published once follow has returned is always delivered.
    let cursor = afterSeq ?? (await this.kept()).last;
    let stopped = false;
    let stopAlone: (() => void) | undefined;
    let behind: CatchUp | undefined;
    void (async () => {
      try {
        while (!stopped) {
          const found = tail.after(cursor, FOLLOW_BATCH);
          if ("gone" in found && tail.isEnded()) {
            stopAlone = await this.followAlone(cursor, handler);
            if (stopped) stopAlone();
            return;
          }
          if ("gone" in found) {
            behind ??= await this.catchUp(cursor);
            for (const k of await behind.next(Math.min(FOLLOW_BATCH, Math.max(1, tail.oldestHeld() - 1 - cursor)))) {
              if (stopped) return;
              await handler(k.seq, k.msg);
              cursor = k.seq;
            }
            continue;
          }
          behind?.stop();
          behind = undefined;
          if (found.messages.length === 0) await tail.next();
          for (const k of found.messages) {
            if (stopped) return;
            await handler(k.seq, k.msg);
            cursor = k.seq;
          }
        }
      } finally {
        behind?.stop();
      }
    })().catch((err) => this.opts.log.warn("event follower stopped", { err: messageOf(err) }));
    return () => {
      stopped = true;
      stopAlone?.();
    };
  }

  /**
   * A follower's own consumer from after `afterSeq`, read a batch at a time. The process's
   * followers that are behind take their batches in turns (`catchingUp`), each batch's reading
   * followed by a rest as long as it took: a batch is read and parsed as it arrives, before any
   * stream's writer can pace it, so forty streams replaying a long history each with batches in
   * flight held the event loop for seconds (a health probe's p99 9.7 s in the bench, 20,000
   * events behind). Each follower asks for its next batch once it has handled the last.
   */
  private async catchUp(afterSeq: number): Promise<CatchUp> {
    const consumer = await this.ownConsumer(afterSeq);
    const read = async (n: number): Promise<Kept[]> => {
      const started = performance.now();
      const got: Kept[] = [];
      for await (const m of await consumer.fetch({ max_messages: n, expires: CATCH_UP_EXPIRES_MS })) got.push({ seq: m.seq, msg: lazyMessage(m.subject, () => m.json()) });
      await sleep(performance.now() - started);
      return got;
    };
    return {
      next: (n) => {
        const batch = this.catchingUp.then(() => read(n));
        this.catchingUp = batch.then(
          () => {},
          () => {},
        );
        return batch;
      },
      stop: () => void consumer.delete().catch(() => {}),
    };
  }

  /** The process's tail of the stream (started by its first follower; again if it ended). */
  private tail(): Promise<Tail> {
    const current = this.tailStarting;
    if (!current) return this.newTail();
    return current.then((t) => {
      if (!t.isEnded()) return t;
      // The first follower to find it ended starts the next; the others wait for that one.
      if (this.tailStarting === current) this.newTail();
      return this.tailStarting ?? this.newTail();
    });
  }

  private newTail(): Promise<Tail> {
    const js = this.js!;
    const size = this.opts.followRing ?? RING_SIZE;
    const starting = this.kept().then(({ first, last }) => Tail.start(js, streamName(this.prefix), feedSubjects(this.prefix), Math.max(first, last - size + 1), lazyMessage, size));
    this.tailStarting = starting;
    // A tail that could not start is not kept: the next follower tries again.
    starting.catch(() => {
      if (this.tailStarting === starting) this.tailStarting = undefined;
    });
    return starting;
  }

  /** An ordered consumer of the changes after `afterSeq`, a follower's own. */
  private ownConsumer(afterSeq: number) {
    if (!this.js) throw new Error("NATS is not connected");
    return this.js.consumers.get(streamName(this.prefix), { filterSubjects: feedSubjects(this.prefix), deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSeq + 1 });
  }

  /** A consumer of the follower's own, for the messages after `afterSeq`. */
  private async followAlone(afterSeq: number, handler: (seq: number, msg: BusMessage) => void | Promise<void>): Promise<() => void> {
    const consumer = await this.ownConsumer(afterSeq);
    // Pulled in bounded batches; a handler that returns a promise (a slow reader) holds the next.
    const messages = await consumer.consume({ max_messages: FOLLOW_BATCH });
    void (async () => {
      for await (const m of messages) await handler(m.seq, lazyMessage(m.subject, () => m.json()));
    })().catch(() => {});
    return () => {
      void messages.close().catch(() => {});
    };
  }

  consume(name: string, subjects: string[], handler: (msg: BusMessage) => Promise<void>): void {
    void this.consumeLoop(name, subjects.map((s) => `${this.prefix}.${s}`), 1, (msgs) => handler(msgs[0]!));
  }

  consumeBatches(name: string, subjects: string[], handler: (msgs: BusMessage[]) => Promise<void>): void {
    void this.consumeLoop(name, subjects.map((s) => `${this.prefix}.${s}`), CONSUME_BATCH, handler);
  }

  /**
   * Keeps the durable consumer going across outages: (re)attaches whenever NATS is back. `batch`
   * is how many changes it has under way at once (1: in order).
   */
  private async consumeLoop(name: string, filters: string[], batch: number, handler: (msgs: BusMessage[]) => Promise<void>): Promise<void> {
    while (!this.closed) {
      try {
        if (!this.js || this.current !== "connected") throw new Error("NATS is not connected");
        await this.ensureStream();
        const jsm = await this.nc!.jetstreamManager();
        const stream = streamName(this.prefix);
        // One filter is `filter_subject`: servers before 2.10 know no `filter_subjects`.
        const filter = filters.length === 1 ? { filter_subject: filters[0] } : { filter_subjects: filters };
        // From the start of the stream's history: a consumer created after its service started
        // (NATS still connecting) must not miss what was announced meanwhile; handlers are
        // idempotent, so a day of history handled again is harmless.
        const config = { durable_name: name, ...filter, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, max_ack_pending: batch, ack_wait: nanos(ACK_WAIT_MS) };
        try {
          await jsm.consumers.add(stream, config);
        } catch (err) {
          // A consumer an earlier release made with another ack wait or batch: given this one's.
          if (!/already (exists|in use)/i.test(messageOf(err))) throw err;
          const { config: was } = await jsm.consumers.info(stream, name);
          await jsm.consumers.update(stream, name, { ...was, ack_wait: config.ack_wait, max_ack_pending: batch });
        }
        // Pulled with nats.js's default buffer: max_ack_pending (the batch) bounds what is delivered.
        await this.handleBatches(name, await (await this.js.consumers.get(stream, name)).consume(), batch, handler);
      } catch (err) {
        // Waiting for NATS is expected; failing while connected is worth a line.
        if (!this.closed && this.current === "connected") this.opts.log.warn("change consumer not running; retrying", { consumer: name, err: messageOf(err) });
      }
      await new Promise((r) => setTimeout(r, REDELIVER_MS));
    }
  }

  /**
   * Hands the consumer's messages over, up to `batch` at once: those already delivered when the
   * first is taken. Acknowledged together when the handler resolves, handed over again together
   * a second later when it fails.
   */
  private async handleBatches(name: string, messages: ConsumerMessages, batch: number, handler: (msgs: BusMessage[]) => Promise<void>): Promise<void> {
    const waiting = new Delivered(messages);
    for (;;) {
      const got = await waiting.take(batch);
      if (got.length === 0) return;
      // Given back, with what was delivered behind them: the consumer's next instance gets them
      // after GIVE_BACK_MS, without waiting out its ack wait.
      if (this.closed) {
        await waiting.giveBack(got);
        return;
      }
      // While they are handled the changes are said to be in progress, so a long handler keeps
      // them; a process that dies with them unacknowledged holds them back one ack wait only.
      const beat = setInterval(() => {
        for (const m of got) m.working();
      }, ACK_WAIT_MS / 3);
      const done = handler(got.map((m) => ({ subject: m.subject, data: payload(() => m.json()) })))
        .then(
          () => {
            for (const m of got) m.ack();
          },
          (err) => {
            this.opts.log.warn("change handler failed; redelivering", { consumer: name, subjects: [...new Set(got.map((m) => m.subject))], err: messageOf(err) });
            for (const m of got) m.nak(REDELIVER_MS);
          },
        )
        .finally(() => clearInterval(beat));
      this.handling.add(done);
      await done;
      this.handling.delete(done);
    }
  }

  /**
   * Changes being handled finish and are acknowledged first (for up to CLOSE_HANDLING_MS): a
   * durable consumer has one change (or batch) in flight at a time, so one left unacknowledged
   * would hold back every later change from the consumer's next instance for the whole ack wait
   * (ACK_WAIT_MS).
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.handling.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.handling]), new Promise((r) => (timer = setTimeout(r, CLOSE_HANDLING_MS)))]);
      clearTimeout(timer);
    }
    if (this.nc) await this.nc.drain().catch(() => {});
  }
}

export function natsBus(opts: NatsBusOptions): Bus {
  return new NatsBus(opts);
}

const locals = new Map<string, Bus>();

/**
 * In-process stand-in: delivers to subscribers of this process only. Every part of one process
 * (a gateway and services run together) shares the one bus of a prefix.
 */
export function localBus(prefix: string): Bus {
  let bus = locals.get(prefix);
  if (!bus) {
    bus = newLocalBus(prefix);
    locals.set(prefix, bus);
  }
  return bus;
}

function newLocalBus(prefix: string): Bus {
  const handlers: ((msg: BusMessage) => void)[] = [];
  const followers = new Set<(seq: number, msg: BusMessage) => void>();
  // The last messages, for followers resuming from a sequence.
  const recent: { seq: number; msg: BusMessage }[] = [];
  // Nothing is kept across a restart, but the numbers must still only grow, or a client resuming
  // with an id from before would be taken for one that is up to date: they start at the start
  // time in microseconds.
  let seq = Date.now() * 1000;
  const feed = feedSubjects(prefix);
  return {
    kind: "local",
    prefix,
    async publish(subject, data) {
      // Like NATS: feeds and subscribers hear the change subjects only (not the audit records).
      if (!subject.startsWith(`${prefix}.`)) return;
      const msg = { subject, data };
      for (const h of handlers) h(msg);
      // Like a feed's NATS consumer: followers hear the change subjects, none below them.
      if (!subjectMatches(feed, subject)) return;
      seq++;
      recent.push({ seq, msg });
      if (recent.length > 1000) recent.shift();
      for (const f of followers) f(seq, msg);
    },
    subscribe(subjects, handler) {
      const filters = subjects.map((x) => `${prefix}.${x}`);
      handlers.push((msg) => {
        if (filters.some((f) => subjectMatches(f, msg.subject))) handler(msg);
      });
    },
    state: () => "connected",
    kept: async () => ({ first: recent[0]?.seq ?? seq + 1, last: seq }),
    async follow(afterSeq, handler) {
      if (afterSeq !== undefined) for (const r of recent) if (r.seq > afterSeq) handler(r.seq, r.msg);
      followers.add(handler);
      return () => {
        followers.delete(handler);
      };
    },
    consume(_name, subjects, handler) {
      const filters = subjects.map((x) => `${prefix}.${x}`);
      // In order, one at a time; a failed message is retried before the next.
      let chain = Promise.resolve();
      const deliver = (msg: BusMessage): Promise<void> =>
        handler(msg).catch(() => new Promise<void>((r) => setTimeout(r, REDELIVER_MS)).then(() => deliver(msg)));
      handlers.push((msg) => {
        if (filters.some((f) => subjectMatches(f, msg.subject))) chain = chain.then(() => deliver(msg));
      });
    },
    // One process's changes come one at a time: each is a batch of its own.
    consumeBatches(name, subjects, handler) {
      this.consume(name, subjects, (msg) => handler([msg]));
    },
    async close() {
      locals.delete(prefix);
    },
  };
}
