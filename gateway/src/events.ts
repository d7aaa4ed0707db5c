// GET /events: the change feed as Server-Sent Events, filtered to what the caller may see and
// resumable with Last-Event-ID (the bus's sequence number).
import type { Access, Bus, Catalog, ChangeMessage, Identity, Logger } from "@vnm/kit";
import type { Request, Response } from "express";
import { HttpError } from "./http-error.ts";

/** A client this far behind is cut off (it resumes with Last-Event-ID). */
const MAX_BUFFERED = 1024 * 1024;
const KEEPALIVE_MS = 15_000;

export interface EventFeed {
  serve(req: Request, res: Response, who: Identity, base: string): Promise<void>;
}

export function eventFeed(catalog: Catalog, rules: Map<string, Access>, bus: Bus, log: Logger): EventFeed {
  // Per kind: its media type name without version ("Bridge"), and whether non-admins may see it
  // at all (a kind only administrators may read stays out of their feeds).
  const names = new Map<string, string>();
  const openToTenants = new Set<string>();
  for (const m of catalog.resources) {
    const r = m.resource!;
    names.set(r.kind, r.mediaType.replace(/-v\d+$/, ""));
  }
  for (const route of catalog.routes) {
    if (route.method !== "GET" || route.shape.kind !== "item") continue;
    const access = rules.get(`${route.service}/${route.rpc}`);
    if (access && !access.adminOnly) openToTenants.add(route.shape.item.resource!.kind);
  }

  // Notifications name the kind within its domain; the catalog qualifies it ("bridge.Bridge").
  const visible = (who: Identity, c: ChangeMessage) =>
    who.role === "admin" || (openToTenants.has(`${c.domain}.${c.kind}`) && c.tenantId !== null && c.tenantId === who.tenantId);

  return {
    async serve(req, res, who, base) {
      const raw = req.headers["last-event-id"] ?? (typeof req.query["lastEventId"] === "string" ? req.query["lastEventId"] : undefined);
      let after: number | undefined;
      if (raw !== undefined) {
        after = Number(raw);
        if (!Number.isSafeInteger(after) || after < 0) {
          throw new HttpError(400, "Validation error(s) found", [
            { property: "Last-Event-ID", message: "must be the id of an event already received" },
          ]);
        }
      }
      if (bus.state() !== "connected") {
        throw new HttpError(503, "The change feed is unavailable; try again later", [], { "Retry-After": "1" });
      }
      res.writeHead(200, {
        "Content-Type": "text/event-stream; charset=utf-8",
        "Cache-Control": "no-store",
        Connection: "keep-alive",
        "X-Accel-Buffering": "no",
      });
      res.write("retry: 2000\n\n");
      let open = true;
      const close = () => {
        if (!open) return;
        open = false;
        clearInterval(keepalive);
        stop?.();
        res.end();
      };
      const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
      let stop: (() => void) | undefined;
      res.on("close", close);
      try {
        stop = await bus.follow(after, (seq, msg) => {
          const c = msg.data as ChangeMessage | null;
          if (!open || !c || typeof c.kind !== "string" || !visible(who, c)) return;
          const data = { kind: names.get(`${c.domain}.${c.kind}`) ?? c.kind, id: c.id, uri: base + c.path };
          res.write(`event: ${c.event}\nid: ${seq}\ndata: ${JSON.stringify(data)}\n\n`);
          if (res.writableLength > MAX_BUFFERED) {
            log.warn("event stream closed: client too slow", { user: who.name });
            close();
          }
        });
        if (!open) stop();
      } catch (err) {
        log.warn("event stream could not start", { err: (err as Error).message });
        close();
      }
    },
  };
}
