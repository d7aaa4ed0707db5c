// GET /events: the change feed as Server-Sent Events, filtered to what the caller may see and
// resumable with Last-Event-ID (the bus's sequence number). A stream ends when its token expires
// or is revoked; a user has at most VNM_EVENT_STREAMS_PER_USER open on a gateway; a replay is
// written with back-pressure (it waits for the client to read), and all the streams of a gateway
// together write a bounded number of events per turn of the event loop, so requests arriving
// meanwhile (a health probe) are read between two turns, however many replays run.
import type { Bus, Catalog, ChangeMessage, Identity, Logger, Metrics } from "@vnm/kit";
import { once } from "node:events";
import { constants as H } from "node:http2";
import { setTimeout as delay, setImmediate } from "node:timers/promises";
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

export interface EventFeed {
  serve(req: ApiRequest, res: ApiResponse, who: Identity, base: string): Promise<void>;
  /**
   * Ends every open stream, telling its client to reconnect in RESUME_MS (the gateway is
   * stopping; the client resumes at another with Last-Event-ID).
   */
  closeAll(): void;
}

/**
 * A feed resumes only after an event it still keeps, or the newest: an id it never gave would
 * wait silently for events that may never come, and one older than what is kept would skip
 * what was dropped. Either is a 410, the client's signal to list again and follow from now.
 */
async function resumable(bus: Bus, after: number): Promise<void> {
  const { first, last } = await bus.kept();
  if (after > last) throw EdgeError.gone(`Last-Event-ID ${after} was never given by this feed (its newest event is ${last}); list again, then follow without it`);
  if (after < first - 1) throw EdgeError.gone(`The events after ${after} are no longer kept; list again, then follow without Last-Event-ID`);
}

/** Where a feed resumes: after the Last-Event-ID (header or ?lastEventId=), if given. */
function resumeAfter(req: ApiRequest): number | undefined {
  const raw = req.headers["last-event-id"] ?? (typeof req.query["lastEventId"] === "string" ? req.query["lastEventId"] : undefined);
  if (raw === undefined) return undefined;
  const after = Number(raw);
  if (!Number.isSafeInteger(after) || after < 0) {
    throw EdgeError.badRequest("Validation error(s) found", [{ property: "Last-Event-ID", message: "must be the id of an event already received" }]);
  }
  return after;
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

export function eventFeed(catalog: Catalog, bus: Bus, log: Logger, metrics: Metrics, revoked: Revocations, maxPerUser = 5): EventFeed {
  // Per kind: its media type name without version ("Bridge"), and whether non-admins may see it
  // at all (a kind only administrators may read stays out of their feeds).
  const names = new Map(catalog.resources.map((m) => [m.resource!.kind, m.resource!.mediaType.replace(/-v\d+$/, "")]));
  const openToTenants = new Set([...catalog.kinds.values()].filter((k) => k.tenancy !== "admin").map((k) => k.kind));
  // Notifications name the kind within its domain; the catalog qualifies it ("bridge.Bridge").
  const visible = (who: Identity, c: ChangeMessage) =>
    who.role === "admin" || (openToTenants.has(`${c.domain}.${c.kind}`) && c.tenantId !== null && c.tenantId === who.tenantId);
  const perUser = streamCounter(maxPerUser);
  const turn = turns(EVENTS_PER_TURN);

  const open = new Set<(retryMs?: number) => void>();
  let ending = false;
  return {
    async serve(req, res, who, base) {
      const after = resumeAfter(req);
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
          const c = msg.data as ChangeMessage | null;
          if (!stream?.isOpen() || !c || typeof c.kind !== "string" || !visible(who, c)) return;
          const data = { kind: names.get(`${c.domain}.${c.kind}`) ?? c.kind, id: c.id, uri: base + c.path };
          await stream.write(`event: ${c.event}\nid: ${seq}\ndata: ${JSON.stringify(data)}\n\n`);
          if (!stream.isOpen()) log.warn("event stream closed: client too slow", { user: who.name });
        });
      } catch (err) {
        perUser.release(who.userId);
        log.warn("event stream could not start", { err: (err as Error).message });
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
