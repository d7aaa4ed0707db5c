// Change notifications: written to the outbox in the same transaction as the change, then
// relayed to the bus by OutboxRelay. Subject: <prefix>.<domain>.<kind>.<event>.
import { hash } from "node:crypto";
import type pg from "pg";
import type { Bus } from "./bus.ts";
import type { Catalog } from "./catalog.ts";
import { inTransaction, type Statement } from "./db.ts";
import type { Logger } from "./log.ts";
import { parseTemplate, type Segment, templateShape } from "./paths.ts";
import { traced, traceFields } from "./telemetry.ts";
import { isUuid } from "./validate.ts";
import { isRecord, messageOf } from "./values.ts";

export type ChangeEvent = "created" | "updated" | "deleted";

/** Every event a change notification may name (a closed set). */
const CHANGE_EVENT_LIST: readonly ChangeEvent[] = ["created", "updated", "deleted"];
export const CHANGE_EVENTS: ReadonlySet<string> = new Set<ChangeEvent>(CHANGE_EVENT_LIST);

export interface Change {
  /** Resource kind, the media type name without version ("Bridge", "DhcpSubnet"). */
  kind: string;
  event: ChangeEvent;
  id: string;
  /** Path of the item below the API root ("/bridges/<id>"). */
  path: string;
  /** Owning tenant, for filtering the event stream; null when the item has none. */
  tenantId: string | null;
  /**
   * Set on a change announced a second time below its subject, for the parts inside the system
   * that act on it alone (TENANT_MOVED); feeds read the four-token change subjects only
   * (feedSubjects), so no client sees it twice.
   */
  topic?: typeof TENANT_MOVED;
}

/**
 * The topic of an item's update that moved it to another tenant: announced again on
 * <prefix>.<domain>.<Kind>.updated.tenant, for the parts that keep a copy of an item's tenant
 * (the routing service's ports of a bridge), which then consume the moves instead of every update.
 */
export const TENANT_MOVED = "tenant";

/** What a feed reads of the stream: the change subjects, <prefix>.<domain>.<Kind>.<event>, nothing below them. */
export function feedSubjects(prefix: string): string {
  return `${prefix}.*.*.*`;
}

/** The message carried on the bus. */
export interface ChangeMessage extends Change {
  domain: string;
  at: string;
  /** The request that made the change, when a request did (also in the X-Request-Id header). */
  requestId?: string;
  /** The W3C trace context of the write, when tracing is on (the relay's publish span continues it). */
  traceparent?: string;
  tracestate?: string;
}

export function changeSubject(prefix: string, domain: string, kind: string, event: ChangeEvent, topic?: string): string {
  return `${prefix}.${domain}.${kind}.${event}${topic ? `.${topic}` : ""}`;
}

/** Parses <prefix>.<domain>.<kind>.<event>; undefined for anything else. */
export function parseChangeSubject(prefix: string, subject: string): { domain: string; kind: string; event: string } | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const parts = subject.slice(prefix.length + 1).split(".");
  if (parts.length !== 3 || !parts[0] || !parts[1] || !parts[2]) return undefined;
  return { domain: parts[0], kind: parts[1], event: parts[2] };
}

/**
 * Why a message on the change subjects is not passed on by a feed: its subject is not
 * <prefix>.<domain>.<Kind>.<event> (`subject`), names no kind of the catalog (`kind`) or an event
 * outside CHANGE_EVENTS (`event`); its body is not a JSON object or says another domain, kind or
 * event than its subject (`body`); its id and path are not an item of that kind (`path`); its
 * tenant is neither a string nor null (`tenant`).
 */
export type ChangeDrop = "subject" | "kind" | "event" | "body" | "path" | "tenant";

/** A change as a feed may pass it on: kind and event from its subject, its path one of the kind's. */
export interface FeedChange {
  /** The qualified kind ("bridge.Bridge"). */
  kind: string;
  event: ChangeEvent;
  /** The item's key: its path's last segment. */
  id: string;
  /** The item's path below the API root, checked against the kind's item templates. */
  path: string;
  tenantId: string | null;
}

/** A path segment as the services write one (paths.ts' pathValue): safe characters and %XX escapes, not "." or "..". */
const SEGMENT = /^(?:[A-Za-z0-9\-._~:@!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$/;

/**
 * Reads the change messages of a bus (a feed's): what a message says is taken from its subject,
 * which the broker lets only the owning domain publish on (deploy/nats.conf: `<prefix>.<domain>.>`),
 * never from its body, which any part allowed some subject can write. The body gives only what
 * the subject cannot: the item's id and path, each checked against the kind's item templates
 * (an `{id}` is a UUID, any other key a plain path segment), and its tenant; a body that names
 * another domain, kind or event than its subject is dropped, not believed.
 */
export function changeReader(catalog: Pick<Catalog, "kinds" | "routes">, prefix: string): (subject: string, data: unknown) => FeedChange | { drop: ChangeDrop } {
  // Shapes of the item paths that end in a UUID key ("/bridges/{}"): a variable segment where such
  // an item stands (a DHCP subnet's bridge) is that item's id.
  const itemRoutes = catalog.routes.filter((r) => r.method === "GET" && r.shape.kind === "item" && r.shape.item.resource);
  const uuidShapes = new Set(itemRoutes.filter((r) => r.template.endsWith("/{id}")).map((r) => templateShape(r.template)));
  type Part = { literal: string } | { uuid: boolean };
  const forms = new Map<string, Part[][]>();
  for (const r of itemRoutes) {
    const kind = r.shape.kind === "item" ? r.shape.item.resource!.kind : "";
    const segments: Segment[] = parseTemplate(r.template);
    const parts = segments.map((seg, i): Part => ("literal" in seg ? seg : { uuid: uuidShapes.has(templateShape(`/${r.template.slice(1).split("/").slice(0, i + 1).join("/")}`)) }));
    forms.set(kind, [...(forms.get(kind) ?? []), parts]);
  }
  const fits = (parts: Part[], segs: string[]) =>
    parts.length === segs.length &&
    parts.every((p, i) => {
      const s = segs[i]!;
      if ("literal" in p) return p.literal === s;
      return p.uuid ? isUuid(s) : SEGMENT.test(s) && !/^\.+$/.test(s);
    });
  return (subject, data) => {
    const parsed = parseChangeSubject(prefix, subject);
    if (!parsed) return { drop: "subject" };
    const kind = `${parsed.domain}.${parsed.kind}`;
    const shapes = forms.get(kind);
    if (!catalog.kinds.has(kind) || !shapes) return { drop: "kind" };
    const event = CHANGE_EVENT_LIST.find((e) => e === parsed.event);
    if (!event) return { drop: "event" };
    if (!isRecord(data)) return { drop: "body" };
    const { domain, kind: itsKind, event: itsEvent, path, id, tenantId } = data;
    if (domain !== parsed.domain || itsKind !== parsed.kind || itsEvent !== event) return { drop: "body" };
    if (typeof path !== "string" || typeof id !== "string" || !path.startsWith("/")) return { drop: "path" };
    const segs = path.slice(1).split("/");
    if (segs[segs.length - 1] !== id || !shapes.some((parts) => fits(parts, segs))) return { drop: "path" };
    if (tenantId !== null && typeof tenantId !== "string") return { drop: "tenant" };
    return { kind, event, id, path, tenantId };
  };
}

/** The outbox rows of some changes: subject and JSON payload. */
function outboxRows(prefix: string, domain: string, changes: Change[], requestId?: string): { subject: string; payload: string }[] {
  const at = new Date().toISOString();
  return changes.map(({ topic, ...c }) => ({
    subject: changeSubject(prefix, domain, c.kind, c.event, topic),
    payload: JSON.stringify({ ...c, domain, at, ...(requestId ? { requestId } : {}), ...traceFields() } satisfies ChangeMessage),
  }));
}

/**
 * The statements that write the changes' outbox rows and commit, for one round trip: the rows
 * go as escaped literals in the same simple query as the COMMIT.
 */
export function commitStatements(client: Pick<pg.PoolClient, "escapeLiteral">, prefix: string, domain: string, changes: Change[], requestId?: string): string {
  if (changes.length === 0) return "COMMIT";
  const values = outboxRows(prefix, domain, changes, requestId)
    .map((r) => `(${client.escapeLiteral(r.subject)}, ${client.escapeLiteral(r.payload)}::jsonb)`)
    .join(", ");
  return `INSERT INTO outbox (subject, payload) VALUES ${values}; COMMIT`;
}

/**
 * `text`, a statement that writes and returns rows (INSERT ... RETURNING), with the changes'
 * outbox rows written by the same statement, so it needs no transaction around it: its rows are
 * its result. Undefined when `text` returns nothing, or holds a WITH of its own.
 */
export function withOutboxRows(text: string, values: unknown[], prefix: string, domain: string, changes: Change[], requestId?: string): Statement | undefined {
  if (!/^\s*(INSERT|UPDATE|DELETE)\b/i.test(text) || !/\bRETURNING\b/i.test(text)) return undefined;
  if (changes.length === 0) return { text, values };
  const all = [...values];
  const rows = outboxRows(prefix, domain, changes, requestId).map((r) => {
    all.push(r.subject, r.payload);
    return `($${all.length - 1}, $${all.length}::jsonb)`;
  });
  return { text: `WITH written AS (${text}), announced AS (INSERT INTO outbox (subject, payload) VALUES ${rows.join(", ")}) SELECT * FROM written`, values: all };
}

/**
 * While changes keep coming, the relay's rounds start at most this often. A round costs the
 * same whatever it carries (two Postgres statements, a NATS flush, the acknowledgements, and a
 * burst of notifications for every gateway to read and act on), and under load rounds ran back
 * to back with a few changes each: POSTs in turns with and without it, 610 against 687 per
 * second with 20 ms, 715 with 50 ms (docs/perf/README.md). A change after a quiet spell is
 * published at once; under load one waits at most this long more.
 */
export const RELAY_SPACING_MS = 20;

/**
 * An outbox row's message id, by which the bus drops a row published twice: its schema, its id and
 * a digest of its body. The id alone is not enough across a database failover: a transaction whose
 * commit the promoted standby never received may have been seen (and published) by the relay of
 * the old primary (Postgres shows a commit before its standby confirms it), and the new primary
 * can hand its row's id to another change, which the bus would then drop as a repeat.
 */
export function messageId(schema: string, id: string, payload: unknown): string {
  return `${schema}-${id}-${hash("sha256", JSON.stringify(payload), "base64url").slice(0, 16)}`;
}

/**
 * Publishes outbox rows in order and deletes them once the broker has acknowledged them. One
 * replica drains at a time (transaction-level advisory lock); a failed publish leaves the rows
 * for the next round, and the bus drops a re-sent message by its id (messageId).
 * Rounds start no closer than `spacingMs` apart: changes committed meanwhile share one.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  /** The next round, when one is due but waits for the spacing. */
  private next: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private lastStart = Number.NEGATIVE_INFINITY;
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private readonly bus: Bus;
  private readonly log: Logger;
  private readonly intervalMs: number;
  private readonly spacingMs: number;

  /** Told of each failed round (a metric counts them). */
  onFailure: () => void = () => {};

  constructor(pool: pg.Pool, schema: string, bus: Bus, log: Logger, intervalMs = 500, spacingMs = RELAY_SPACING_MS) {
    this.pool = pool;
    this.schema = schema;
    this.bus = bus;
    this.log = log;
    this.intervalMs = intervalMs;
    this.spacingMs = spacingMs;
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), this.intervalMs);
    this.timer.unref();
    this.kick();
  }

  /**
   * Asks for a round soon: at once, or when the spacing since the last round's start has passed;
   * calls made while one runs or waits fold into one more round.
   */
  kick(): void {
    if (this.stopped || this.next) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const wait = this.lastStart + this.spacingMs - Date.now();
    if (wait > 0) {
      this.next = setTimeout(() => {
        this.next = undefined;
        this.kick();
      }, wait);
      return;
    }
    this.lastStart = Date.now();
    this.running = this.drain()
      .catch((err) => {
        this.onFailure();
        this.log.warn("outbox relay: publish failed, will retry", { err: messageOf(err) });
      })
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Publishes everything committed so far (used by tests and at shutdown). */
  async flush(): Promise<void> {
    while (this.running) await this.running;
    await this.drain();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    clearTimeout(this.next);
    this.next = undefined;
    while (this.running) await this.running;
  }

  /**
   * Takes up to 500 rows out of the outbox, oldest first, and publishes them; their delete
   * commits once every one is acknowledged, and a failed publish rolls it back, so the rows stay
   * for the next round. Undefined when another replica holds the outbox.
   */
  private async publishBatch(q: pg.PoolClient): Promise<number | undefined> {
    // The lock and the delete in one statement: a first row saying whether the lock was taken,
    // joined to the deleted rows when it was (none: one row of nulls). The statement's snapshot
    // is older than the lock: rows another replica published and deleted while this one waited
    // for it would still show, but a DELETE skips a row whose delete has committed, so no row is
    // published twice. Deleting here instead of locking the rows (FOR UPDATE) and deleting them
    // by id after the publish writes each row once, not twice. The ids go in as an array so the
    // delete finds them through the primary key whatever the planner thinks the table holds.
    const taken = await q.query<{ ok: boolean; id: string | null; subject: string; payload: unknown }>(
      `WITH l AS (SELECT pg_try_advisory_xact_lock(hashtext($1)) AS ok),
         o AS (DELETE FROM outbox WHERE id = ANY(ARRAY(SELECT id FROM outbox WHERE (SELECT ok FROM l) ORDER BY id LIMIT 500)) RETURNING id, subject, payload)
       SELECT l.ok, o.id, o.subject, o.payload FROM l LEFT JOIN o ON true`,
      [`vnm-outbox:${this.schema}`],
    );
    if (!taken.rows[0]?.ok) return undefined;
    // A DELETE returns its rows in no set order: oldest first, by their ids (bigint, as text).
    const rows = taken.rows.filter((r): r is typeof r & { id: string } => r.id !== null).sort((a, b) => a.id.length - b.id.length || (a.id < b.id ? -1 : 1));
    const publish = (r: (typeof rows)[number]) => () => this.bus.publish(r.subject, r.payload, messageId(this.schema, r.id, r.payload));
    const attributes = (r: (typeof rows)[number]) => ({ "messaging.system": "nats", "messaging.destination.name": r.subject });
    await Promise.all(rows.map((r) => traced(`publish ${r.subject}`, "producer", attributes(r), publish(r), isRecord(r.payload) ? r.payload : undefined)));
    return rows.length;
  }

  private async drain(): Promise<void> {
    for (;;) {
      const client = await this.pool.connect();
      let count: number | undefined;
      try {
        // Losing this transaction's delete in a crash only means publishing again, which the
        // bus drops by message id: its commit need not wait for the disk. The BEGIN goes out
        // with the lock and the delete: two round trips with the COMMIT.
        count = await inTransaction(client, (q) => this.publishBatch(q), { begin: "BEGIN; SET LOCAL synchronous_commit = off" });
      } finally {
        client.release();
      }
      if (count === undefined) {
        // Another replica is draining; it may have missed rows committed just now.
        setTimeout(() => this.kick(), 50).unref();
        return;
      }
      if (count < 500) return;
    }
  }
}
