// GET /events: the change feed as Server-Sent Events, filtered to what the caller may see and
// resumable with Last-Event-ID (the bus's sequence number).
import type { Bus, Catalog, ChangeMessage, Identity, Logger, Metrics } from "@vnm/kit";
import { ApiError } from "@vnm/kit";
import type { Request, Response } from "express";

/** A client this far behind is cut off (it resumes with Last-Event-ID). */
const MAX_BUFFERED = 1024 * 1024;
const KEEPALIVE_MS = 15_000;

export interface EventFeed {
  serve(req: Request, res: Response, who: Identity, base: string): Promise<void>;
  /** Ends every open stream (the gateway is stopping; clients resume with Last-Event-ID). */
  closeAll(): void;
}

/** Where a feed resumes: after the Last-Event-ID (header or ?lastEventId=), if given. */
function resumeAfter(req: Request): number | undefined {
  const raw = req.headers["last-event-id"] ?? (typeof req.query["lastEventId"] === "string" ? req.query["lastEventId"] : undefined);
  if (raw === undefined) return undefined;
  const after = Number(raw);
  if (!Number.isSafeInteger(after) || after < 0) {
    throw ApiError.http(400, "Validation error(s) found", [{ property: "Last-Event-ID", message: "must be the id of an event already received" }]);
  }
  return after;
}

/** Starts the SSE response; returns a function that writes to it while it is open, and its closer. */
function openStream(res: Response, onClose: () => void) {
  res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", Connection: "keep-alive", "X-Accel-Buffering": "no" });
  res.write("retry: 2000\n\n");
  let open = true;
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  const close = () => {
    if (!open) return;
    open = false;
    clearInterval(keepalive);
    onClose();
    res.end();
  };
  res.on("close", close);
  return { isOpen: () => open, close };
}

export function eventFeed(catalog: Catalog, bus: Bus, log: Logger, metrics: Metrics): EventFeed {
  // Per kind: its media type name without version ("Bridge"), and whether non-admins may see it
  // at all (a kind only administrators may read stays out of their feeds).
  const names = new Map(catalog.resources.map((m) => [m.resource!.kind, m.resource!.mediaType.replace(/-v\d+$/, "")]));
  const openToTenants = new Set([...catalog.kinds.values()].filter((k) => k.tenancy !== "admin").map((k) => k.kind));
  // Notifications name the kind within its domain; the catalog qualifies it ("bridge.Bridge").
  const visible = (who: Identity, c: ChangeMessage) =>
    who.role === "admin" || (openToTenants.has(`${c.domain}.${c.kind}`) && c.tenantId !== null && c.tenantId === who.tenantId);

  const open = new Set<() => void>();
  return {
    async serve(req, res, who, base) {
      const after = resumeAfter(req);
      if (bus.state() !== "connected") throw ApiError.http(503, "The change feed is unavailable; try again later", [], { "Retry-After": "1" });
      let stop: (() => void) | undefined;
      const stream = openStream(res, () => {
        open.delete(stream.close);
        metrics.eventStreams.dec();
        stop?.();
      });
      open.add(stream.close);
      metrics.eventStreams.inc();
      try {
        stop = await bus.follow(after, (seq, msg) => {
          const c = msg.data as ChangeMessage | null;
          if (!stream.isOpen() || !c || typeof c.kind !== "string" || !visible(who, c)) return;
          const data = { kind: names.get(`${c.domain}.${c.kind}`) ?? c.kind, id: c.id, uri: base + c.path };
          res.write(`event: ${c.event}\nid: ${seq}\ndata: ${JSON.stringify(data)}\n\n`);
          if (res.writableLength > MAX_BUFFERED) {
            log.warn("event stream closed: client too slow", { user: who.name });
            stream.close();
          }
        });
        if (!stream.isOpen()) stop();
      } catch (err) {
        log.warn("event stream could not start", { err: (err as Error).message });
        stream.close();
      }
    },
    closeAll() {
      for (const close of [...open]) close();
    },
  };
}
