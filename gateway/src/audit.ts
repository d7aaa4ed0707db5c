// The audit trail: every write asked of the API (POST, PUT, PATCH, DELETE on a catalog route, and every
// login attempt) with who asked, in which tenant, what, the request id and how it ended. Each is
// one structured log line ("audit") at once, and goes on NATS within AUDIT_BATCH_WAIT_MS, with the
// other records of its subject `<prefix>-audit.<domain>.<Kind>`, as one message (a JSON array) in
// a stream of its own kept 30 days. Refusals are recorded too: they are what an auditor looks for.
import { randomUUID } from "node:crypto";
import { constants as H } from "node:http2";
import { auditRoot, type Bus, type Catalog, type Identity, type Logger } from "@vnm/kit";
import type { ApiRequest, ApiResponse } from "./context.ts";
import { basicCredentials } from "./auth.ts";

export interface AuditRecord {
  at: string;
  requestId: string;
  /** The caller; for a login, the name it tried (the rest absent). */
  user: string | null;
  userId: string | null;
  role: string | null;
  tenantId: string | null;
  method: string;
  /** "bridge.Bridge", or "identity.login". */
  kind: string;
  /** The resource's path (a creation's Location), without the base URI. */
  path: string;
  /** Its last path segment: the id, or the key within its parent. */
  id: string | null;
  status: number;
  outcome: "succeeded" | "refused" | "failed";
  /** A dry run (`?dryRun=All`): every check ran, nothing was written. */
  dryRun?: true;
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Records of one subject wait at most this long for others before going out as one message: a
 * message per write cost a POST 13-16% of its rate (a JetStream publish, its store and its
 * acknowledgement each time). The log line is written at once.
 */
export const AUDIT_BATCH_WAIT_MS = 100;
/** A message holds at most this many records, or this many bytes of them (NATS refuses payloads over its max_payload, 1 MB by default). */
export const AUDIT_BATCH_MAX_RECORDS = 500;
const AUDIT_BATCH_MAX_BYTES = 256 * 1024;

export interface AuditTrail {
  /** Records a finished request when it was a write or a login. */
  record(req: ApiRequest, res: ApiResponse, who: Identity | undefined): void;
  /** Publishes what waits (at shutdown, once no request is left). */
  flush(): Promise<void>;
}

/** The kind each RPC acts on ("bridge.Bridge"), from the catalog. */
function kindsByRpc(catalog: Catalog): Map<string, string> {
  const byRpc = new Map<string, string>();
  for (const k of catalog.kinds.values()) for (const rpc of Object.values(k.rpcs)) byRpc.set(`${k.service}/${rpc}`, k.kind);
  return byRpc;
}

/** The user name a login tried (HTTP Basic), never its password. */
function loginName(req: ApiRequest): string | null {
  try {
    return basicCredentials(req).name;
  } catch {
    return null;
  }
}

/** The record of a finished request, or undefined when it is no write. */
function recordOf(req: ApiRequest, res: ApiResponse, who: Identity | undefined, kinds: ReturnType<typeof kindsByRpc>): AuditRecord | undefined {
  const rpc = res.locals.rpc;
  const isLogin = req.path === "/login" && req.method === "POST";
  // An RPC that is no kind's own verb (a trace's start, say) is named after its domain and itself.
  const own = (r: string) => kinds.get(r) ?? `${res.locals.domain}.${r.slice(r.lastIndexOf("/") + 1)}`;
  const kind = isLogin ? "identity.login" : WRITES.has(req.method) && rpc ? own(rpc) : undefined;
  if (!kind) return undefined;
  const created = res.locals.created;
  const path = typeof created === "string" && res.statusCode === H.HTTP_STATUS_CREATED ? created : req.path;
  const status = res.statusCode;
  return {
    at: new Date().toISOString(),
    requestId: res.locals.requestId,
    user: isLogin ? loginName(req) : (who?.name ?? null),
    userId: who?.userId ?? null,
    role: who?.role ?? null,
    tenantId: who?.tenantId ?? null,
    method: req.method,
    kind,
    path,
    id: isLogin ? null : decodeURIComponent(path.split("/").pop() ?? "") || null,
    status,
    outcome: status < 400 ? "succeeded" : status < 500 ? "refused" : "failed",
    ...(res.locals.dryRun ? { dryRun: true as const } : {}),
  };
}

/** The records of one subject waiting to go out, and the bytes of their JSON. */
interface Batch {
  records: AuditRecord[];
  bytes: number;
  timer: NodeJS.Timeout;
}

export function auditTrail(catalog: Catalog, bus: Bus, log: Logger): AuditTrail {
  const kinds = kindsByRpc(catalog);
  const root = auditRoot(bus.prefix);
  const waiting = new Map<string, Batch>();
  const inFlight = new Set<Promise<void>>();
  const send = (subject: string) => {
    const batch = waiting.get(subject);
    if (!batch) return;
    waiting.delete(subject);
    clearTimeout(batch.timer);
    // The log lines are the record of last resort; the bus copies are lost while NATS is (said in the log).
    const sent = bus
      .publish(subject, batch.records, randomUUID())
      .catch((err: Error) => log.warn("audit records not published", { records: batch.records.length, requestIds: batch.records.map((r) => r.requestId), err: err.message }))
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  };
  return {
    record(req, res, who) {
      const record = recordOf(req, res, who, kinds);
      if (!record) return;
      log.info("audit", { ...record });
      const subject = `${root}.${record.kind}`;
      const bytes = JSON.stringify(record).length + 1;
      if ((waiting.get(subject)?.bytes ?? 0) + bytes > AUDIT_BATCH_MAX_BYTES) send(subject);
      let batch = waiting.get(subject);
      if (!batch) {
        batch = { records: [], bytes: 1, timer: setTimeout(() => send(subject), AUDIT_BATCH_WAIT_MS) };
        waiting.set(subject, batch);
      }
      batch.records.push(record);
      batch.bytes += bytes;
      if (batch.records.length >= AUDIT_BATCH_MAX_RECORDS) send(subject);
    },
    async flush() {
      for (const subject of [...waiting.keys()]) send(subject);
      await Promise.all(inFlight);
    },
  };
}
