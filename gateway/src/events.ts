// GET /events: the change feed as Server-Sent Events, filtered to what the caller may see and
// resumable with Last-Event-ID (the bus's sequence number for an administrator, sealed for anyone
// else: see eventIds). What an event says is read from its message's subject, not its body
// (changes.ts' changeReader); a message that disagrees is dropped and counted. A stream ends
// when its token expires or is revoked; a user has at most VNM_EVENT_STREAMS_PER_USER open on a
// gateway; a replay is written with back-pressure (it waits for the client to read), and all the
// streams of a gateway together write a bounded number of events per turn of the event loop, so
// requests arriving meanwhile (a health probe) are read between two turns, however many replays
// run.
import { type Bus, type Catalog, type ChangeDrop, changeReader, type FeedChange, type Identity, type Logger, messageOf, type Metrics } from "@vnm/kit";
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { constants as H } from "node:http2";
import { setTimeout as delay, setImmediate } from "node:timers/promises";
import { LRUCache } from "lru-cache";
import type { ApiRequest, ApiResponse } from "./context.ts";
import { EdgeError } from "./http-error.ts";
import type { CallerCheck as Revocations } from "@vnm/kit";

/** A client that does not read for this long is cut off (it resumes with Last-Event-ID). */
const DRAIN_MS = 30_000;
/** Events all the streams of a gateway write together in one turn of the event loop. */
const EVENTS_PER_TURN = 64;
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
  const { first, last } = await bus.kept();
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

/**
 * A share of the events written in one turn of the event loop: resolves at once while the
 * turn's budget lasts, else in the next turn (after the I/O that arrived meanwhile is read).
 * Waiters resume in the order they came, so the streams take turns.
 */
function turns(perTurn: number): () => Promise<void> {
  let left = perTurn;
  let next: Promise<void> | undefined;
  return async () => {
    while (left <= 0) {
      next ??= setImmediate().then(() => {
        left = perTurn;
        next = undefined;
      });
      await next;
    }
    left--;
  };
}

/** Starts the SSE response; returns whether it is open, its closer and a back-pressured writer. */
function openStream(res: ApiResponse, turn: () => Promise<void>, onClose: () => void) {
  // The stream's connection carries nothing after it: when the stream ends (a token expired, a
  // client too slow, the gateway stopping), the gateway closes it, so the client must not take
  // it for its next request (it would find it closed under that request). Naming Connection
  // keeps the edge's Keep-Alive hint off it.
  res.writeHead(H.HTTP_STATUS_OK, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", Connection: "close", "X-Accel-Buffering": "no" });
  res.write("retry: 2000\n\n");
  let open = true;
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  const close = (retryMs?: number) => {
    if (!open) return;
    open = false;
    clearInterval(keepalive);
    onClose();
    if (retryMs === undefined) return void res.end();
    // The connection goes too, so the client's next request goes to another gateway.
    const socket = res.socket;
    res.end(`retry: ${retryMs}\n\n`, () => socket?.end());
  };
  res.on("close", () => close());
  /** Writes in its turn; waits for 'drain' when the socket is full (closing a client that never reads). */
  const write = async (chunk: string): Promise<void> => {
    await turn();
    if (!open) return;
    // The events of one turn leave in one write to the socket.
    if (!res.writableCorked) {
      res.cork();
      process.nextTick(() => res.uncork());
    }
    if (!res.write(chunk)) {
      const drained = await Promise.race([once(res, "drain").then(() => true, () => false), delay(DRAIN_MS, undefined, { ref: false }).then(() => false)]);
      if (!drained) return close();
    }
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
  const turn = turns(EVENTS_PER_TURN);

  const open = new Set<(retryMs?: number) => void>();
  let ending = false;
  return {
    async serve(req, res, who, base) {
      const ids = who.role === "admin" ? sequenceIds : tenantIds(who.tenantId ?? "");
      const raw = lastEventId(req);
      const after = raw === undefined ? undefined : ids.take(raw);
      // A request that reached this gateway after closeAll: the client comes back at another one.
      if (ending) return openStream(res, turn, () => {}).close(RESUME_MS);
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
        if (ending && !res.destroyed) openStream(res, turn, () => {}).close(RESUME_MS);
        return;
      }
      let untie: (() => void) | undefined;
      stream = openStream(res, turn, () => {
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
