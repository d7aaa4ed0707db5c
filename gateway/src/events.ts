// GET /events: the change feed as Server-Sent Events, filtered to what the caller may see and
// resumable with Last-Event-ID (the bus's sequence number for an administrator, sealed for anyone
// else: see eventIds). What an event says is read from its message's subject, not its body
// (changes.ts' changeReader); a message that disagrees is dropped and counted. A stream ends
// when its token expires or is revoked; a user has at most VNM_EVENT_STREAMS_PER_USER open on a
// gateway; a replay is written with back-pressure (it waits for the client to read), and all the
// streams of a gateway together write events for a bounded time per turn of the event loop, a
// stream's waiting events in one write (writer), so requests arriving meanwhile (a health probe)
// are read between two turns, however many replays run.
import { type Bus, type Catalog, type ChangeDrop, changeReader, type FeedChange, type Identity, type Logger, messageOf, type Metrics } from "@vnm/kit";
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { constants as H } from "node:http2";
import { LRUCache } from "lru-cache";
import type { ApiRequest, ApiResponse } from "./context.ts";
import { EdgeError } from "./http-error.ts";
import type { CallerCheck as Revocations } from "@vnm/kit";

/** A client that does not read for this long is cut off (it resumes with Last-Event-ID). */
const DRAIN_MS = 30_000;
/** How long all the streams of a gateway make events, and write them, in one turn, at most (writer). */
const TURN_MS = 2;
/** The share of a gateway's time its event streams may take when they have more to write than it can. */
const EVENTS_SHARE = 0.5;
/** Events a stream queues before its consumer waits for them to be written. */
const STREAM_QUEUE = 256;
const KEEPALIVE_MS = 15_000;
/** How soon a client reconnects after this gateway ended its stream to stop (the SSE `retry:`). */
const RESUME_MS = 250;
/** Messages whose reading (an event, or why it was dropped) is kept for the other streams that hear them. */
const READINGS_KEPT = 4096;

export interface EventFeed {
  serve(req: ApiRequest, res: ApiResponse, who: Identity, base: string): Promise<void>;
  /**
   * Ends every open stream, telling its client to reconnect in RESUME_MS (the gateway is
   * stopping; the client resumes at another with Last-Event-ID).
   */
  closeAll(): void;
}

const neverGiven = () => EdgeError.gone("Last-Event-ID was never given by this feed; list again, then follow without it");
const malformedId = () => EdgeError.badRequest("Validation error(s) found", [{ property: "Last-Event-ID", message: "must be the id of an event already received" }]);

/**
 * A feed resumes only after an event it still keeps, or the newest: an id it never gave would
 * wait silently for events that may never come, and one older than what is kept would skip
 * what was dropped. Either is a 410, the client's signal to list again and follow from now. The
 * answer names no sequence number: a tenant's would tell it how many changes the others made.
 */
async function resumable(bus: Bus, after: number): Promise<void> {
  // JetStream not answering (a NATS server lost, its cluster electing a leader) is the feed
  // unavailable for now, as a stream that cannot start is: a 503 the client retries.
  const { first, last } = await bus.kept().catch(() => {
    throw EdgeError.unavailable("The change feed is unavailable; try again later");
  });
  if (after > last) throw neverGiven();
  if (after < first - 1) throw EdgeError.gone("The events after that Last-Event-ID are no longer kept; list again, then follow without it");
}

/** The Last-Event-ID a feed resumes after (header or ?lastEventId=), if given. */
function lastEventId(req: ApiRequest): string | undefined {
  const header = req.headers["last-event-id"];
  if (header !== undefined) return String(header);
  return typeof req.query["lastEventId"] === "string" ? req.query["lastEventId"] : undefined;
}

/** The ids of one caller's stream: each event's, and the sequence number after a Last-Event-ID. */
interface EventIds {
  give(seq: number): string;
  /** The sequence number an id stands for; throws the caller's 400 or 410 when it stands for none. */
  take(raw: string): number;
}

/** An administrator's ids: the bus's sequence numbers (an administrator sees every change). */
const sequenceIds: EventIds = {
  give: (seq) => String(seq),
  take(raw) {
    const after = Number(raw);
    if (raw === "" || !Number.isSafeInteger(after) || after < 0) throw malformedId();
    return after;
  },
};

const SEALED_ID = /^[A-Za-z0-9_-]{22}$/;

/**
 * Everyone else's ids, sealed: the sequence number and the caller's tenant, encrypted as one AES
 * block (base64url, 22 characters) under a key every gateway of the deployment derives alike (from
 * their shared client credential and the bus prefix). A tenant resumes exactly where it was (the
 * id stands for one sequence number) but learns nothing of the numbers between its events, which
 * count every other tenant's changes; an id of another tenant's, or made up, opens nothing (410).
 */
function eventIds(secret: string, prefix: string): (tenantId: string) => EventIds {
  const keys = Buffer.from(hkdfSync("sha256", secret, prefix, "vnm /events ids v1", 64));
  const cipherKey = keys.subarray(0, 32);
  const tagKey = keys.subarray(32);
  // One cipher each way for the gateway's life: ECB chains nothing, so each 16-byte update is one
  // block sealed or opened on its own (a cipher made per id cost 30 us, this 4).
  const seal = createCipheriv("aes-256-ecb", cipherKey, null).setAutoPadding(false);
  const unseal = createDecipheriv("aes-256-ecb", cipherKey, null).setAutoPadding(false);
  return (tenantId) => {
    // The block's second half: the tenant's tag, which a block this feed sealed for it holds.
    const tag = createHmac("sha256", tagKey).update(tenantId).digest().subarray(0, 8);
    return {
      give(seq) {
        const block = Buffer.alloc(16);
        block.writeBigUInt64BE(BigInt(seq));
        tag.copy(block, 8);
        return seal.update(block).toString("base64url");
      },
      take(raw) {
        // A number is an id of an administrator's feed (or of this one before ids were sealed).
        if (/^[0-9]+$/.test(raw)) throw neverGiven();
        const sealed = SEALED_ID.test(raw) ? Buffer.from(raw, "base64url") : undefined;
        // Whole blocks only: a part of one would stay in the cipher and spoil the next.
        if (sealed?.length !== 16) throw malformedId();
        const block = unseal.update(sealed);
        const seq = block.readBigUInt64BE(0);
        if (!timingSafeEqual(block.subarray(8), tag) || seq > BigInt(Number.MAX_SAFE_INTEGER)) throw neverGiven();
        return Number(seq);
      },
    };
  };
}

/** A stream's events waiting for their turn (see writer). */
interface Pending {
  /** Writes what is pending in one write to the socket; false when the socket is full. */
  flush(): boolean;
}

/**
 * The gateway's one writer of events. A stream's events wait in its own list; in each turn the
 * streams with events write them in turn (round robin), a stream's whole list in one write to
 * its socket, for at most `turnMs` together, and the events waiting to be made (admit) are made
 * for at most `turnMs` more. One write per stream per turn, not one per event: a write to a
 * socket is a system call, and one per event made a replay to 40 clients cost the gateway about
 * 150 us an event (issue 57). Between two turns the writer rests for as long as its last turn
 * took, times (1 - share) / share, so however many streams replay, the events take at most
 * `share` of the gateway's time and the rest goes to everything else (requests, health probes,
 * new connections); a turn's time counts from its first event made to its last write, the I/O
 * read between them included, so the busier the gateway, the longer the writer rests. A live
 * feed's turn takes microseconds, and so does its rest.
 */
export function writer(turnMs: number, share: number) {
  const ready = new Set<Pending>();
  let scheduled = false;
  /** When this turn's first event was made (-1: none yet). */
  let admitting = -1;
  /** No event is made before this time (performance.now()): the writer rests. */
  let restUntil = 0;
  /** Events waiting to be made: in the next turn. */
  let waiting: (() => void)[] = [];
  const turn = () => {
    scheduled = false;
    const start = performance.now();
    const until = start + turnMs;
    for (const p of ready) {
      ready.delete(p);
      p.flush();
      if (performance.now() >= until) break;
    }
    const end = performance.now();
    restUntil = end + (end - (admitting < 0 ? start : Math.min(admitting, start))) * (1 / share - 1);
    admitting = -1;
    // What was waiting is made after this turn's writes, in the order it came.
    const w = waiting;
    waiting = [];
    for (const resume of w) resume();
    if (ready.size > 0) schedule();
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    const rest = restUntil - performance.now();
    if (rest >= 1) setTimeout(turn, rest);
    else setImmediate(turn);
  };
  return {
    /**
     * Before an event is made (read, checked, formatted): at once while this turn has spent less
     * than turnMs making them, else in the next turn. The streams' consumers deliver in bursts,
     * and a burst for 40 streams is thousands of events: this keeps it from holding the loop.
     */
    admit(): Promise<void> | undefined {
      const now = performance.now();
      if (now >= restUntil) {
        if (admitting < 0) admitting = now;
        if (now - admitting < turnMs) return;
      }
      schedule();
      return new Promise<void>((resume) => waiting.push(resume));
    },
    /** This stream has events to write: it is written in its turn. */
    ready(p: Pending) {
      ready.add(p);
      schedule();
    },
    forget(p: Pending) {
      ready.delete(p);
    },
  };
}

/**
 * Starts the SSE response; returns whether it is open, its closer and a back-pressured writer:
 * `write` resolves once the event is queued while fewer than STREAM_QUEUE wait, else once they
 * are written (and the socket has room), so a stream that cannot keep up holds its consumer.
 */
function openStream(res: ApiResponse, events: ReturnType<typeof writer>, onClose: () => void) {
  // The stream's connection carries nothing after it: when the stream ends (a token expired, a
  // client too slow, the gateway stopping), the gateway closes it, so the client must not take
  // it for its next request (it would find it closed under that request). Naming Connection
  // keeps the edge's Keep-Alive hint off it.
  res.writeHead(H.HTTP_STATUS_OK, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", Connection: "close", "X-Accel-Buffering": "no" });
  res.write("retry: 2000\n\n");
  let open = true;
  let queued: string[] = [];
  /** Set while the socket is full: 'drain' (or the drain deadline) ends it. */
  let draining = false;
  /** The writes held back (queue full, socket full): released when both have room. */
  let held: (() => void)[] = [];
  const release = () => {
    const h = held;
    held = [];
    for (const r of h) r();
  };
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  const close = (retryMs?: number) => {
    if (!open) return;
    open = false;
    clearInterval(keepalive);
    events.forget(pending);
    queued = [];
    release();
    onClose();
    if (retryMs === undefined) return void res.end();
    // The connection goes too, so the client's next request goes to another gateway.
    const socket = res.socket;
    res.end(`retry: ${retryMs}\n\n`, () => socket?.end());
  };
  const pending: Pending = {
    flush() {
      if (!open || queued.length === 0) return true;
      const chunk = queued.length === 1 ? queued[0]! : queued.join("");
      queued = [];
      if (res.write(chunk)) {
        release();
        return true;
      }
      // A client that does not read within DRAIN_MS is cut off (it resumes with Last-Event-ID).
      draining = true;
      const timer = setTimeout(() => close(), DRAIN_MS).unref();
      res.once("drain", () => {
        clearTimeout(timer);
        draining = false;
        if (queued.length > 0) events.ready(pending);
        else release();
      });
      return false;
    },
  };
  res.on("close", () => close());
  const write = (chunk: string): Promise<void> | undefined => {
    if (!open) return;
    queued.push(chunk);
    if (!draining) events.ready(pending);
    if (queued.length < STREAM_QUEUE && !draining) return;
    return new Promise<void>((resolve) => held.push(resolve));
  };
  return { isOpen: () => open, close, write };
}

/** Open streams per user (this gateway's): the (N+1)th is refused. */
function streamCounter(maxPerUser: number) {
  const open = new Map<string, number>();
  return {
    take(userId: string) {
      const n = open.get(userId) ?? 0;
      if (n >= maxPerUser) {
        throw EdgeError.tooManyRequests(`At most ${maxPerUser} event streams may be open per user; close one first`, 1);
      }
      open.set(userId, n + 1);
    },
    release(userId: string) {
      const n = (open.get(userId) ?? 1) - 1;
      if (n <= 0) open.delete(userId);
      else open.set(userId, n);
    },
  };
}

/** Closes a stream when its token expires, and when its user's tokens change and it is no longer current. */
function endWithToken(who: Identity, revoked: Revocations, close: () => void): () => void {
  const expiry = setTimeout(close, Math.min(Math.max(0, who.exp * 1000 - Date.now()), 2 ** 31 - 1));
  const unsubscribe = revoked.onChange((userId) => {
    if (userId !== who.userId) return;
    revoked.current(who).then((ok) => ok || close(), () => close());
  });
  return () => {
    clearTimeout(expiry);
    unsubscribe();
  };
}

/**
 * The change a message on the bus (by sequence number) stands for, or undefined when it is
 * dropped. Each is read once per gateway, however many streams hear it: a dropped one is counted
 * (vnm_events_dropped_total) and logged once.
 */
function changeReadings(catalog: Catalog, prefix: string, log: Logger, metrics: Metrics) {
  const read = changeReader(catalog, prefix);
  const readings = new LRUCache<number, FeedChange | { drop: ChangeDrop }>({ max: READINGS_KEPT });
  return (seq: number, subject: string, data: () => unknown): FeedChange | undefined => {
    let r = readings.get(seq);
    if (!r) {
      r = read(subject, data());
      readings.set(seq, r);
      if ("drop" in r) {
        metrics.eventsDropped.inc({ reason: r.drop });
        log.warn("change message dropped from /events", { seq, subject, reason: r.drop });
      }
    }
    return "drop" in r ? undefined : r;
  };
}

/**
 * `idSecret`: what every gateway of the deployment shares and no client knows (the gateways'
 * client credential), from which the sealed ids' key is derived.
 */
export function eventFeed(catalog: Catalog, bus: Bus, log: Logger, metrics: Metrics, revoked: Revocations, idSecret: string, maxPerUser = 5): EventFeed {
  // Per kind: its media type name without version ("Bridge"), and whether non-admins may see it
  // at all (a kind only administrators may read stays out of their feeds).
  const names = new Map(catalog.resources.map((m) => [m.resource!.kind, m.resource!.mediaType.replace(/-v\d+$/, "")]));
  const openToTenants = new Set([...catalog.kinds.values()].filter((k) => k.tenancy !== "admin").map((k) => k.kind));
  const visible = (who: Identity, c: FeedChange) => who.role === "admin" || (openToTenants.has(c.kind) && c.tenantId !== null && c.tenantId === who.tenantId);
  const tenantIds = eventIds(idSecret, bus.prefix);
  const reading = changeReadings(catalog, bus.prefix, log, metrics);
  const perUser = streamCounter(maxPerUser);
  const events = writer(TURN_MS, EVENTS_SHARE);

  const open = new Set<(retryMs?: number) => void>();
  let ending = false;
  return {
    async serve(req, res, who, base) {
      const ids = who.role === "admin" ? sequenceIds : tenantIds(who.tenantId ?? "");
      const raw = lastEventId(req);
      const after = raw === undefined ? undefined : ids.take(raw);
      // A request that reached this gateway after closeAll: the client comes back at another one.
      if (ending) return openStream(res, events, () => {}).close(RESUME_MS);
      if (bus.state() !== "connected") throw EdgeError.unavailable("The change feed is unavailable; try again later");
      if (after !== undefined) await resumable(bus, after);
      perUser.take(who.userId);
      // The consumer exists before the client hears the stream is open: a change the client
      // makes once it has the headers is always on its stream. Events arriving meanwhile wait
      // for the headers to be written.
      let stream: ReturnType<typeof openStream> | undefined;
      let opened!: () => void;
      const headersSent = new Promise<void>((resolve) => (opened = resolve));
      let stop: () => void;
      try {
        stop = await bus.follow(after, async (seq, msg) => {
          await headersSent;
          await events.admit();
          if (!stream?.isOpen()) return;
          const c = reading(seq, msg.subject, () => msg.data);
          if (!c || !visible(who, c)) return;
          const data = { kind: names.get(c.kind) ?? c.kind, id: c.id, uri: base + c.path };
          await stream.write(`event: ${c.event}\nid: ${ids.give(seq)}\ndata: ${JSON.stringify(data)}\n\n`);
          if (!stream.isOpen()) log.warn("event stream closed: client too slow", { user: who.name });
        });
      } catch (err) {
        perUser.release(who.userId);
        log.warn("event stream could not start", { err: messageOf(err) });
        throw EdgeError.unavailable("The change feed is unavailable; try again later");
      }
      // The client left, or the gateway began to stop, while the consumer was being made.
      if (res.destroyed || req.socket.destroyed || ending) {
        perUser.release(who.userId);
        stop();
        opened();
        if (ending && !res.destroyed) openStream(res, events, () => {}).close(RESUME_MS);
        return;
      }
      let untie: (() => void) | undefined;
      stream = openStream(res, events, () => {
        open.delete(stream!.close);
        perUser.release(who.userId);
        metrics.eventStreams.dec();
        untie?.();
        stop();
      });
      open.add(stream.close);
      metrics.eventStreams.inc();
      untie = endWithToken(who, revoked, stream.close);
      opened();
    },
    closeAll() {
      ending = true;
      for (const close of [...open]) close(RESUME_MS);
    },
  };
}
