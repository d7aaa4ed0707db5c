// One kind kept in one table: its SQL and its REST handlers (list, get, create, replace,
// delete) derived from a declaration of its columns. What the proto files already say comes
// from the catalog: the RPCs, the display name, the parent a kind lives under, the item's path
// (its `uri` link) and the tenant rule. A kind nested under a parent (a bridge's DHCP subnets,
// a subnet's hosts) names the column holding its parent's row and how its path segment maps
// onto its key; deleting the parent deletes it, announced row by row.
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { type Catalog, type FieldInfo, type KindInfo, writableFields } from "./catalog.ts";
import { type Change, type ChangeEvent, TENANT_MOVED } from "./changes.ts";
import { assertIdentifier, PG, pgCode, preparedReads, type Queryable } from "./db.ts";
import { ApiError, type Violation } from "./errors.ts";
import { checkConditions } from "./conditions.ts";
import type { GrpcPackage } from "./proto.ts";
import { FILTER_KEY } from "./upstream.ts";
import { EMPTY_LISTS_KEY, withEmptyLists } from "./empty-lists.ts";
import { PATCH_KEY, type PatchPaths, patchedMessage, readPatchPaths } from "./patch.ts";
import { itemPath, parseTemplate, sharedVariables } from "./paths.ts";
import type { CallContext, Finish, Handlers, Store } from "./service.ts";
import type { Checked, MessageName, Rules } from "./rules.ts";
import type { QuotaGuard } from "./quota.ts";
import type { Messages } from "./gen/messages.ts";
import { isUuid } from "./validate.ts";
import { isRecord, stringMember } from "./values.ts";

type Emit = (c: Change) => void;
type Row = pg.QueryResultRow;
type Req = Record<string, unknown>;

/** An item's row and its ancestors' rows, nearest first. */
export interface Located<R extends Row = Row> {
  row: R;
  up: Row[];
}

/** How a path names one item within its parent. */
export interface KeySpec {
  /** The key columns from the request's path fields; undefined when the path names nothing. By default its `id`. */
  read?(req: Req): Record<string, unknown> | undefined;
  /**
   * Columns a list narrows by, from its path (the VLAN of a MAC table, the router of a route);
   * none by default. Throws the 404 of a path that names nothing.
   */
  scope?(req: Req): Record<string, unknown>;
}

/** The default key: the request's `id`, a UUID, in column `id`. */
const byId = (req: Req) => (isUuid(req["id"]) ? { id: req["id"].toLowerCase() } : undefined);

/**
 * One kind's declaration. `P` is its proto message: the hooks get a body that passed the
 * message's rules (rules.ts), typed as the message (`Checked<P>`, gen/messages.ts).
 */
export interface ResourceSpec<P extends MessageName, R extends Row> {
  /** The proto message ("vnm.lb.v1.Pool"): RPCs, name, parent, path and tenancy come from the catalog. */
  proto: P;
  /** Table with an `id` primary key; top-level tables also keep `seq` (creation order). */
  table: string;
  /**
   * A view items are read from when they carry derived columns (a pool's members), over the
   * table's rows; writes still go to the table.
   */
  view?: string;
  /** Column holding the parent row's id, for a kind that lives under another. */
  parentColumn?: string;
  key?: KeySpec;
  /**
   * List order: columns before the creation order (`seq`, or `id` for a nested kind), which
   * breaks ties and keeps pages stable.
   */
  order?: string[];
  /**
   * Values of the writable fields the body leaves out (PUT replaces); null when not named here.
   * Used by the columns derived from the proto.
   */
  defaults?: Partial<Messages[P]>;
  /**
   * Values of the writable columns. By default each writable field of the proto (not read-only,
   * not `id`) goes to the column of its snake_case name, or its default when the body leaves it out.
   */
  columns?(body: Checked<P>, req: Req): Record<string, unknown> | Promise<Record<string, unknown>>;
  /**
   * Row (and its ancestors' rows, nearest first) -> proto message; null columns are left out.
   * By default each field of the proto but links and write-only ones is read from the column of
   * its snake_case name.
   */
  render?(row: R, up: Row[]): Record<string, unknown | null>;
  /** The column holding the owning tenant; kinds under a parent carry their ancestor's. */
  tenantColumn?: string;
  /**
   * The columns of shown fields a `render` reads from another name (a subnet's `subnetPrefix`
   * from `prefix`): a list's field filters (`?subnetPrefix=`) compare them. Every other shown
   * field is filtered on the column of its snake_case name.
   */
  fieldColumns?: Partial<Record<keyof Messages[P] & string, string>>;
  /**
   * List filters: request field (a query parameter) -> column. The value is checked against the
   * rules the list request's proto states for that field (400 naming it).
   */
  filters?: Record<string, string>;
  /**
   * Checks (and locks) what the body refers to, before the row is written: `at.ctx` is the
   * caller (none when the service writes for itself), `at.current` the item as it is on an
   * update (read before its row lock: what it names then need not be asked for again).
   */
  references?(q: Queryable, body: Checked<P>, at: { ctx?: CallContext; current?: R }): Promise<void>;
  /** Checks a body against the item's place: its ancestors, and on PUT its current row; `at.ctx` is the caller. */
  validate?(q: Queryable, body: Checked<P>, at: { up: Row[]; current?: R; ctx?: CallContext }): Promise<void> | void;
  /** What else goes when the item goes (beyond its children), announced; runs first. */
  cascade?(q: Queryable, row: R, emit: Emit, ctx: CallContext): Promise<void>;
  /** The message of a 409 for a unique constraint other than the primary key. */
  conflict?(body: Checked<P>, constraint: string): string;
  /**
   * Rows a create takes over rather than refusing it with a 409: `unique`, the columns of the
   * unique constraint it meets; `when`, which of the rows holding them it may take (SQL over
   * the table's columns); `set`, what taking one writes. The taken item is announced `updated`.
   * (An ARP pair a device taught becomes the operator's when the operator writes it.)
   */
  adopts?: { unique: string[]; when: string; set: string };
  /**
   * For a kind whose items take different fields by the value of one of them (a rule's `type`):
   * that field, and the fields each of its values takes besides the fields of no value. The
   * kind's hooks hold to it (a rule drops the others sent); forms show only the chosen value's
   * (the console's build reads it here).
   */
  variants?: { field: string; fields: Record<string, readonly string[]> };
  /** Fields that go together, by what they say (a rule's match conditions), for forms to show under a title. */
  groups?: { title: string; fields: readonly string[] }[];
  /**
   * After the item was written and announced: what else it changes, announced (a member
   * created changes its pool's `members`). `body` is what was written (none on a delete);
   * `before` the row an update replaced (a member moved changes its old pool too).
   */
  changed?(q: Queryable, row: R, event: ChangeEvent, emit: Emit, body?: Checked<P>, before?: R): Promise<void>;
}

/** A page of a list: at most `limit` items after the item `marker`. */
export interface Page {
  limit?: number;
  marker?: string;
}

export const MAX_PAGE = 1000;

/** The page a list request asks for (its `limit` and `marker` fields); 400 when malformed. */
export function pageOf(req: Req): Page {
  const page: Page = {};
  if (req["limit"] !== undefined) {
    const limit = Number(req["limit"]);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw ApiError.invalid([{ property: "limit", message: `must be between 1 and ${MAX_PAGE}` }]);
    }
    page.limit = limit;
  }
  if (req["marker"] !== undefined && req["marker"] !== "") {
    if (!isUuid(req["marker"])) throw badMarker();
    page.marker = req["marker"].toLowerCase();
  }
  return page;
}

const lastSegment = (path: string) => path.slice(path.lastIndexOf("/") + 1);

const badMarker = () => ApiError.invalid([{ property: "marker", message: "must be the id of an item of this list" }]);

/** WHERE clause over equal columns (a column may be named twice), numbered from $1. */
function whereEqual(cols: Record<string, unknown> | [string, unknown][]): { sql: string; params: unknown[] } {
  const pairs = Array.isArray(cols) ? cols : Object.entries(cols);
  return { sql: pairs.map(([c], i) => `${assertIdentifier(c)} = $${i + 1}`).join(" AND "), params: pairs.map(([, v]) => v) };
}

/**
 * A filter's value as its column takes it (Postgres' data_type names), or undefined when it is
 * not one: the gateway typed it by the proto field, this checks it against the column.
 */
function columnValue(type: string, v: unknown): unknown {
  switch (type) {
    case "uuid":
      return isUuid(v) ? v.toLowerCase() : undefined;
    case "boolean":
      return typeof v === "boolean" ? v : undefined;
    case "smallint":
    case "integer":
    case "bigint":
      return (typeof v === "number" && Number.isInteger(v)) || (typeof v === "string" && /^-?\d{1,19}$/.test(v)) ? v : undefined;
    case "numeric":
    case "real":
    case "double precision":
      return typeof v === "number" && Number.isFinite(v) ? v : undefined;
    case "text":
    case "character varying":
    case "character":
    case "inet":
    case "cidr":
    case "macaddr":
      return typeof v === "string" ? v : undefined;
    default:
      return undefined;
  }
}

/** What a column of a type is called in a 400. */
const TYPE_WORDS: Record<string, string> = { uuid: "a valid UUID", boolean: "true or false", smallint: "an integer", integer: "an integer", bigint: "an integer" };

/** A list call's filters (FILTER_KEY): field name -> value as the gateway typed it from the query. */
function filtersOf(ctx: CallContext | undefined): Record<string, unknown> {
  const raw = ctx?.metadata.get(FILTER_KEY)[0];
  if (typeof raw !== "string") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw ApiError.badRequest("The list's filters are not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw ApiError.badRequest("The list's filters must be an object");
  return parsed as Record<string, unknown>;
}

/** Postgres' refusals of a value for a column's type (an address that is none): the filter's fault. */
const BAD_VALUE = new Set(["22P02", "22003", "22007", "22008"]);

/** A request for the route at `to`, its path variables taken by position from one at `from`. */
function positional(from: string, to: string, req: Req): Req {
  return Object.fromEntries(sharedVariables(parseTemplate(to), parseTemplate(from)).map(([theirs, ours]) => [theirs, req[ours]]));
}

/** Handlers per gRPC service, merged (a name served twice is a mistake). */
export function mergeHandlers(...records: Record<string, Handlers>[]): Record<string, Handlers> {
  const all: Record<string, Handlers> = {};
  for (const record of records) {
    for (const [name, handlers] of Object.entries(record)) {
      const taken = Object.keys(handlers).filter((rpc) => all[name]?.[rpc]);
      if (taken.length > 0) throw new Error(`${name}: ${taken.join(", ")} served twice`);
      all[name] = { ...all[name], ...handlers };
    }
  }
  return all;
}

/** A field's column: its snake_case name ("adminStateUp" -> "admin_state_up"). */
export function columnOf(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** A value as Postgres takes it: objects, and arrays of objects, as JSON (jsonb columns). */
function toColumn(v: unknown): unknown {
  if (Array.isArray(v)) return v.some((x) => typeof x === "object" && x !== null) ? JSON.stringify(v) : v;
  return typeof v === "object" && v !== null ? JSON.stringify(v) : v;
}

/** A resource of any message and row type (lists of a service's kinds). */
/** A resource of any message and row type (lists of a service's kinds); its hooks take their own kind's (bivariant methods). */
export type AnyResource = Resource<MessageName, Row>;

/** The request's body field (a message: an object), or none. */
const bodyOf = (req: Req, field: string | undefined): Record<string, unknown> => {
  const sent = req[field ?? ""];
  return isRecord(sent) ? sent : {};
};

type Column = { name: string; column: string };

/** What a Resource knows once its service has started: its kind in the catalog, and its siblings. */
interface Binding {
  set: ResourceSet;
  info: KindInfo;
  /** The fields of the proto a client may send (but `id`), and those it reads back (but links and write-only ones). */
  writable: Column[];
  shown: Column[];
  /** The list RPC's request message, whose fields' rules check the list's filters. */
  listRequest: string | undefined;
}

/**
 * The Resources one service serves, bound to the catalog the service was started with: each
 * learns its kind from it, and a kind nested under another finds its parent here.
 */
export class ResourceSet {
  readonly catalog: Catalog;
  /** grpc-js's package of the same proto files: a write's entity tag is its GET's answer as a peer decodes it. */
  readonly pkg: GrpcPackage | undefined;
  /** The fields' rules of the same proto files (buf.validate), every body and filter is checked against. */
  readonly rules: Rules | undefined;
  /** The quota check of the service's creates (quota.ts); none when no quota service is configured. */
  quota: QuotaGuard | undefined;
  private readonly byKind = new Map<string, AnyResource>();

  /** `pkg` and `rules` may be left out by a reader of declarations that serves nothing (the console's build). */
  constructor(catalog: Catalog, resources: readonly AnyResource[], pkg?: GrpcPackage, rules?: Rules) {
    this.catalog = catalog;
    this.pkg = pkg;
    this.rules = rules;
    for (const r of resources) this.byKind.set(r.bind(this).kind, r);
  }

  /**
   * The entity tag of `message` answered by `rpc` of a service (GrpcPackage.answerTag): what a
   * write's If-Match and If-None-Match are checked against.
   */
  answerTag(fullName: string, rpc: string, message: unknown): string {
    if (!this.pkg) throw new Error(`${fullName}/${rpc}: the service's resources were made without the grpc package`);
    return this.pkg.answerTag(fullName, rpc, message);
  }

  /** The Resource declared for a proto message ("vnm.tracing.v1.TraceRequest"). */
  of(proto: string): AnyResource {
    const r = this.byKind.get(this.catalog.kindOf(proto).kind);
    if (!r) throw new Error(`no Resource of this service declares ${proto}`);
    return r;
  }

  /** The Resource of a kind ("bridge.Bridge"), if this service declares it. */
  kind(kind: string): AnyResource | undefined {
    return this.byKind.get(kind);
  }

  all(): AnyResource[] {
    return [...this.byKind.values()];
  }

  /** The kinds declared to live under `kind`. */
  childrenOf(kind: string): AnyResource[] {
    return [...this.byKind.values()].filter((r) => r.info.parent === kind);
  }
}

export class Resource<P extends MessageName, R extends Row> {
  readonly spec: ResourceSpec<P, R>;
  private bound: Binding | undefined;

  constructor(spec: ResourceSpec<P, R>) {
    assertIdentifier(spec.table);
    if (spec.view) assertIdentifier(spec.view);
    this.spec = spec;
  }

  /** Takes this kind's place in a service's set: its catalog entry, checked against the declaration. */
  bind(set: ResourceSet): KindInfo {
    const info = set.catalog.kindOf(this.spec.proto);
    if (info.parent && !this.spec.parentColumn) throw new Error(`${this.spec.proto} lives under ${info.parent}: declare its parentColumn`);
    const { variants, groups } = this.spec;
    const grouped = [...(variants ? [variants.field, ...Object.values(variants.fields).flat()] : []), ...(groups ?? []).flatMap((g) => g.fields)];
    const unknown = grouped.filter((f) => !info.message.byName.has(f));
    if (unknown.length > 0) throw new Error(`${this.spec.proto}: its variants or groups name no field ${unknown.join(", ")}`);
    const named = (f: FieldInfo) => ({ name: f.name, column: columnOf(f.name) });
    const writable = writableFields(info.message, "create").filter((f) => f.name !== "id").map(named);
    const shown = info.message.fields.filter((f) => !f.link && !f.behaviors.has("INPUT_ONLY")).map(named);
    const listRequest = set.catalog.routes.find((r) => r.service === info.service && r.rpc === info.rpcs.list)?.request.fullName;
    this.bound = { set, info, writable, shown, listRequest };
    return info;
  }

  private get binding(): Binding {
    if (!this.bound) throw new Error(`${this.spec.proto} is not part of a started service (no ResourceSet bound it)`);
    return this.bound;
  }

  /** This kind in the catalog: RPCs, display name, parent, path, tenancy. */
  get info(): KindInfo {
    return this.binding.info;
  }

  get name(): string {
    return this.info.resource.displayName;
  }

  /** The Resource of the kind this one lives under (declared in the same service). */
  get parent(): AnyResource | undefined {
    const { info, set } = this.binding;
    if (!info.parent) return undefined;
    const p = set.kind(info.parent);
    if (!p) throw new Error(`${info.kind} lives under ${info.parent}, which this service does not declare`);
    return p;
  }

  private get children(): AnyResource[] {
    return this.binding.set.childrenOf(this.info.kind);
  }

  /** Where items are read: the view of derived columns, else the table. */
  private get readFrom(): string {
    return this.spec.view ?? this.spec.table;
  }

  /** The item as read (with its derived columns) after a write returned the table's row. */
  private async reread(q: Queryable, row: R): Promise<R> {
    if (!this.spec.view) return row;
    return (await q.query<R>(`SELECT * FROM ${this.spec.view} WHERE id = $1`, [row["id"]])).rows[0] ?? row;
  }

  private readKey(req: Req): Record<string, unknown> | undefined {
    return (this.spec.key?.read ?? byId)(req);
  }

  /** The column that orders items by creation: `seq` on a top-level table, `id` on a nested one. */
  private get creationOrder(): string {
    return this.spec.parentColumn ? "id" : "seq";
  }

  notFound(id: string): ApiError {
    return ApiError.noItem(this.name, id);
  }


  /**
   * A POST or PUT body, checked against the proto's rules for its fields (rules.ts).
   * `kept`: on PUT, the current values of the fields accepted at POST only (IMMUTABLE), which
   * keep their value whatever the body says.
   */
  private parse(req: Req, kept: Record<string, unknown> = {}): Checked<P> {
    const sent = req[this.info.body ?? ""] ?? {};
    const body = Object.keys(kept).length > 0 && isRecord(sent) ? { ...sent, ...kept } : sent;
    const { rules } = this.binding.set;
    if (!rules) throw new Error(`${this.spec.proto}: its ResourceSet was made without the rules`);
    return rules.checked(this.spec.proto, body);
  }

  private columnsOf(body: Checked<P>, req: Req): Record<string, unknown> | Promise<Record<string, unknown>> {
    if (this.spec.columns) return this.spec.columns(body, req);
    const b: Record<string, unknown> = body;
    const d: Record<string, unknown> = this.spec.defaults ?? {};
    return Object.fromEntries(this.binding.writable.map((f) => [f.column, toColumn(b[f.name] ?? d[f.name] ?? null)]));
  }

  private renderOf(row: R, up: Row[]): Record<string, unknown> {
    if (this.spec.render) return this.spec.render(row, up);
    return Object.fromEntries(this.binding.shown.map((f) => [f.name, row[f.column] ?? null]));
  }

  toMessage(row: R, up: Row[] = []): Record<string, unknown> {
    return Object.fromEntries(Object.entries(this.renderOf(row, up)).filter(([, v]) => v !== null && v !== undefined));
  }

  /** The item's path below the API root: its `uri` link resolved against its message. */
  pathOf(row: R, up: Row[] = []): string {
    const path = itemPath(this.info.message, this.renderOf(row, up));
    if (!path) throw new Error(`${this.info.kind} has no uri link or root path`);
    return path;
  }

  /** The change notification of an item: its tenant is its own or its nearest ancestor's. */
  change(event: ChangeEvent, row: R, up: Row[] = []): Change {
    const path = this.pathOf(row, up);
    return { kind: this.info.resource.name, event, id: lastSegment(path), path, tenantId: this.tenantOf(row, up) };
  }

  /**
   * Announces an item updated because something it shows changed (a pool's members), read as
   * it is now; nothing when it is gone. For top-level kinds.
   */
  async touched(q: Queryable, id: unknown, emit: Emit): Promise<void> {
    if (typeof id !== "string") return;
    const row = (await q.query<R>(`SELECT * FROM ${this.readFrom} WHERE id = $1`, [id])).rows[0];
    if (row) emit(this.change("updated", row));
  }

  private tenantOf(row: Row, up: Row[]): string | null {
    let r: AnyResource | undefined = this;
    for (const at of [row, ...up]) {
      if (!r) break;
      if (r.spec.tenantColumn) return stringMember(at, r.spec.tenantColumn) ?? null;
      r = r.info.parent ? r.parent : undefined;
    }
    return null;
  }

  /** The parent's request: its path variables taken by position from this kind's request. */
  private parentRequest(req: Req): Req {
    return positional(this.info.itemTemplate, this.parent!.info.itemTemplate, req);
  }

  /**
   * Handlers of lists linked from this kind's items that hold a kind this interface only
   * references (a bridge's ports): empty, and 404 when the item is missing or hidden.
   */
  referencedLists(store: Store, ...rpcs: string[]): Record<string, Handlers> {
    const out: Record<string, Handlers> = {};
    for (const rpc of rpcs) {
      const route = this.binding.set.catalog.routes.find((r) => r.rpc === rpc && r.domain === this.info.resource.domain);
      if (!route) throw new Error(`${rpc} has no HTTP binding in the ${this.info.resource.domain} proto files`);
      out[route.service] = {
        ...out[route.service],
        [rpc]: async (req: Req) => {
          await this.locate(store.pool, positional(route.template, this.info.itemTemplate, req));
          return { items: [] };
        },
      };
    }
    return out;
  }

  /** Ancestors of the item a request names, nearest first (404 when one is missing). */
  private async ancestors(q: Queryable, req: Req, lock?: "key share"): Promise<Row[]> {
    if (!this.parent) return [];
    const p = await this.parent.locate(q, this.parentRequest(req), lock);
    return [p.row, ...p.up];
  }

  private missing(req: Req, up: Row[]): ApiError {
    const last = /\{(\w+)\}$/.exec(this.info.itemTemplate)?.[1] ?? "id";
    const segment = String(req[last] ?? "");
    if (!this.parent) return this.notFound(segment);
    const parentSegment = lastSegment(this.parent.pathOf(up[0]!, up.slice(1)));
    return ApiError.notFound(`${this.parent.name} ${parentSegment} has no ${this.name} ${segment}.`);
  }

  /**
   * The item a request's path names, with its ancestors (404 when any is missing). In a
   * transaction, "key share" keeps it from being deleted until the caller commits; "update"
   * is for changing or deleting it (its ancestors then get "key share").
   */
  async locate(q: Queryable, req: Req, lock?: "key share" | "update"): Promise<Located<R>> {
    const up = await this.ancestors(q, req, lock ? "key share" : undefined);
    const key = this.readKey(req);
    if (!key) throw this.missing(req, up);
    const cols = { ...key, ...(this.spec.parentColumn ? { [this.spec.parentColumn]: up[0]!["id"] } : {}) };
    const row = await this.readRow(q, cols, lock);
    if (!row) throw this.missing(req, up);
    return { row, up };
  }

  /**
   * The row where the columns are equal, as read (with its derived columns), optionally locked.
   * Rows are locked in the table: read and locked in one statement, unless a view of derived
   * columns is read after.
   */
  private async readRow(q: Queryable, cols: Record<string, unknown>, lock?: "key share" | "update"): Promise<R | undefined> {
    const w = whereEqual(cols);
    if (lock && this.spec.view) await q.query(`SELECT 1 FROM ${this.spec.table} WHERE ${w.sql} FOR ${lock.toUpperCase()}`, w.params);
    const lockHere = lock && !this.spec.view ? ` FOR ${lock.toUpperCase()}` : "";
    return (await q.query<R>(`SELECT * FROM ${this.readFrom} WHERE ${w.sql}${lockHere}`, w.params)).rows[0];
  }

  /** A top-level item by id (404 when missing), optionally locked. */
  async find(q: Queryable, id: string, lock?: "key share" | "update"): Promise<R> {
    return (await this.locate(q, { id }, lock)).row;
  }

  /** The id of an existing top-level item named by a path segment (404 when malformed or missing). */
  async existing(q: Queryable, rawId: unknown): Promise<string> {
    return String((await this.locate(q, { id: rawId })).row["id"]);
  }

  /** Items in list order where the columns are equal, a page at a time (keyset: after the marker's place). */
  async list(q: Queryable, where: Record<string, unknown> | [string, unknown][] = {}, page: Page = {}, up: Row[] = []) {
    const w = whereEqual(where);
    const conditions = w.sql ? [w.sql] : [];
    const params = [...w.params];
    const order = [...(this.spec.order ?? []), this.creationOrder].map(assertIdentifier);
    if (page.marker) {
      // The marker must be an item of this very list: another tenant's id is as unknown as none.
      const at = await q.query(`SELECT ${order.join(", ")} FROM ${this.readFrom} WHERE id = $${params.length + 1}${w.sql ? ` AND ${w.sql}` : ""}`, [...params, page.marker]);
      if (!at.rows[0]) throw badMarker();
      const from = params.length;
      params.push(...order.map((c) => at.rows[0][c]));
      conditions.push(`(${order.join(", ")}) > (${order.map((_, i) => `$${from + i + 1}`).join(", ")})`);
    }
    let sql = `SELECT * FROM ${this.readFrom}${conditions.length ? ` WHERE ${conditions.join(" AND ")}` : ""} ORDER BY ${order.join(", ")}`;
    if (page.limit) sql += ` LIMIT ${page.limit + 1}`;
    const rows = (await q.query<R>(sql, params)).rows;
    const more = page.limit !== undefined && rows.length > page.limit;
    if (more) rows.length = page.limit!;
    const items = rows.map((r) => this.toMessage(r, up));
    return more ? { items, next_marker: String(rows[rows.length - 1]!["id"]) } : { items };
  }

  /** The columns a list request's filters (query parameters) ask for; 400 naming a bad value. */
  private filtered(req: Req): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [field, column] of Object.entries(this.spec.filters ?? {})) {
      if (typeof req[field] !== "string") continue;
      const { listRequest, set } = this.binding;
      out[column] = listRequest && set.rules?.has(listRequest) ? set.rules.checkField(listRequest, field, req[field]) : req[field];
    }
    return out;
  }

  private columnTypes: Promise<Map<string, string>> | undefined;

  /** The data types of the columns items are read from, read once from the catalog of the database. */
  private typesOf(q: Queryable): Promise<Map<string, string>> {
    this.columnTypes ??= q
      .query<{ column_name: string; data_type: string }>(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
        [this.readFrom],
      )
      .then((r) => new Map(r.rows.map((c) => [c.column_name, c.data_type])))
      .catch((err: unknown) => {
        this.columnTypes = undefined;
        throw err;
      });
    return this.columnTypes;
  }

  /**
   * The column conditions of a list call's field filters (a field of the representation kept
   * in a column of its name), each value checked against its column's type; 400 naming each
   * field that is none, or whose value its column cannot hold.
   */
  private async fieldFilters(q: Queryable, filters: Record<string, unknown>): Promise<[string, unknown][]> {
    const entries = Object.entries(filters);
    if (entries.length === 0) return [];
    const types = await this.typesOf(q);
    const out: [string, unknown][] = [];
    const violations: Violation[] = [];
    const { rules } = this.binding.set;
    const ruled = rules?.has(this.spec.proto) === true;
    const renamed: Partial<Record<string, string>> = this.spec.fieldColumns ?? {};
    for (const [field, given] of entries) {
      const shown = this.binding.shown.find((f) => f.name === field);
      const column = shown && (renamed[field] ?? shown.column);
      const type = column && types.get(column);
      // The value as the field's rules keep it (a MAC in lower case), or a 400 when it breaks one.
      const value = type && ruled ? rules!.checkField(this.spec.proto, field, given) : given;
      const v = type ? columnValue(type, value) : undefined;
      if (!type) violations.push({ property: field, message: "is not a filter of this list" });
      else if (v === undefined) violations.push({ property: field, message: `must be ${TYPE_WORDS[type] ?? "a value of its field"}` });
      else out.push([column, v]);
    }
    if (violations.length > 0) throw ApiError.invalid(violations);
    return out;
  }

  /** The list a request asks for: under its parent, narrowed by its path, its request filters and the call's field filters. */
  private async listFor(q: Queryable, req: Req, ctx?: CallContext) {
    const up = await this.ancestors(q, req);
    const where: [string, unknown][] = [...Object.entries(this.spec.key?.scope?.(req) ?? {}), ...Object.entries(this.filtered(req))];
    if (this.spec.parentColumn) where.push([this.spec.parentColumn, up[0]!["id"]]);
    return this.listFiltered(q, where, ctx, this.spec.parentColumn ? {} : pageOf(req), up);
  }

  /**
   * Items where the columns are equal and the call's field filters (FILTER_KEY) hold, in list
   * order, a page at a time; tells the caller the filters were applied. For a list RPC of a
   * service's own that reads this kind.
   */
  async listFiltered(q: Queryable, where: Record<string, unknown> | [string, unknown][], ctx?: CallContext, page: Page = {}, up: Row[] = []) {
    const filters = filtersOf(ctx);
    const all = [...(Array.isArray(where) ? where : Object.entries(where)), ...(await this.fieldFilters(q, filters))];
    try {
      const result = await this.list(q, all, page, up);
      if (ctx?.answer) ctx.answer.filtered = true;
      return result;
    } catch (err) {
      if (!BAD_VALUE.has(pgCode(err) ?? "")) throw err;
      throw ApiError.invalid(Object.keys(filters).map((property) => ({ property, message: "is not a valid value of its field" })));
    }
  }

  /**
   * A tenant's top-level item counts against its quota (quota.ts): checked under a lock just
   * before it is written, when it is made or given to another tenant (`before`: the row it replaces).
   */
  private async checkQuota(q: Queryable, cols: Record<string, unknown>, before?: R): Promise<void> {
    const { quota } = this.binding.set;
    const column = this.spec.parentColumn ? undefined : this.spec.tenantColumn;
    const tenant = column ? cols[column] : undefined;
    if (!quota || !column || typeof tenant !== "string" || (before && before[column] === tenant)) return;
    await quota.check(q, { kind: this.info.kind, table: this.spec.table, tenantColumn: column }, tenant);
  }

  /** Runs a write, turning a unique violation into a 409 that says what is taken. */
  private async writing(body: Checked<P>, id: unknown, run: () => Promise<R | undefined>): Promise<R | undefined> {
    try {
      return await run();
    } catch (err) {
      if (pgCode(err) !== PG.uniqueViolation) throw err;
      const constraint = stringMember(err, "constraint") ?? "";
      if (constraint.endsWith("_pkey")) throw ApiError.conflict(`A ${this.name} with ID ${String(id)} already exists.`);
      throw this.conflictError(body, constraint);
    }
  }

  /** The 409 of a write meeting the unique constraint `constraint` (other than the primary key). */
  private conflictError(body: Checked<P>, constraint: string): ApiError {
    return ApiError.conflict(this.spec.conflict?.(body, constraint) ?? `A ${this.name} with these values already exists.`);
  }

  /**
   * Parses a POST body (overridden by `fixed`, e.g. a parent from the path) and writes it,
   * with its checks, in the caller's transaction, under the parent the request names.
   */
  async create(q: Queryable, emit: Emit, asked: Req, fixed: Partial<Checked<P>> = {}, finish?: Finish, ctx?: CallContext) {
    const req = this.withEmptyLists(asked, ctx);
    const up = await this.ancestors(q, req, "key share");
    this.spec.key?.scope?.(req); // a path that names nothing is a 404 before the body is judged
    const body: Checked<P> = { ...this.parse(req), ...fixed };
    await this.spec.references?.(q, body, { ctx });
    await this.spec.validate?.(q, body, { up, ctx });
    const cols: Record<string, unknown> = { ...(await this.columnsOf(body, req)) };
    // Top-level items are named by a UUID (the client's, or a new one); nested ones by their key.
    const sent: Record<string, unknown> = body;
    const id = this.spec.parentColumn ? undefined : typeof sent["id"] === "string" ? sent["id"] : randomUUID();
    if (id) cols["id"] = id;
    if (this.spec.parentColumn) cols[this.spec.parentColumn] = up[0]!["id"];
    await this.checkQuota(q, cols);
    const names = Object.keys(cols).map(assertIdentifier);
    const { adopts } = this.spec;
    const taking = adopts
      ? ` ON CONFLICT (${adopts.unique.map(assertIdentifier).join(", ")}) DO UPDATE SET ${adopts.set} WHERE ${adopts.when} RETURNING *, xmax <> 0 AS "adopted?"`
      : " RETURNING *";
    const sql = `INSERT INTO ${this.spec.table} (${names.join(", ")}) VALUES (${names.map((_, i) => `$${i + 1}`).join(", ")})${taking}`;
    // A top-level item read from its table, with no hook reacting to its creation, is announced
    // from the columns written (its id and tenant are among them), before the insert: the insert
    // then ends the transaction, with the outbox row and the COMMIT in the same round trip.
    const last = finish && this.announcedFromColumns && !adopts ? finish : undefined;
    if (last) emit(this.change("created", cols as R, up));
    const insert = async () => ((last ? await last(sql, Object.values(cols)) : await q.query<R>(sql, Object.values(cols))).rows[0] as R | undefined);
    const written = await this.writing(body, id, insert);
    // Met a row it may not take (`adopts`): as a unique violation.
    if (!written) throw this.conflictError(body, "");
    // A row updated by ON CONFLICT has its xmax set (a new row's is 0): the item was taken over.
    const adopted = adopts !== undefined && written["adopted?"] === true;
    if (adopts) delete written["adopted?"];
    const row = await this.reread(q, written);
    if (!last) emit(this.change(adopted ? "updated" : "created", row, up));
    await this.spec.changed?.(q, row, "created", emit, body);
    // What `changed` wrote may show in the item's derived columns.
    return this.toMessage(this.spec.changed ? await this.reread(q, row) : row, up);
  }

  /** The request with the body's lists the caller gave empty (EMPTY_LISTS_KEY) put back, which the wire cannot carry. */
  private withEmptyLists(req: Req, ctx?: CallContext): Req {
    const raw = ctx?.metadata.get(EMPTY_LISTS_KEY)[0];
    const field = this.info.body;
    if (raw === undefined || !field) return req;
    return { ...req, [field]: withEmptyLists(this.info.message, req[field], raw) };
  }

  /**
   * The item's entity tag as the gateway computes it from a GET: the tag of its message as a
   * gRPC peer decodes it (unset defaults dropped, keys in field order).
   */
  etagOf(row: R, up: Row[]): string {
    if (!this.info.rpcs.get) throw new Error(`${this.info.kind} has no get RPC`);
    return this.binding.set.answerTag(this.info.service, this.info.rpcs.get, this.toMessage(row, up));
  }

  /**
   * A PATCH's body (PATCH_KEY's paths, the request's body field holding the patch's values):
   * the patch merged into the item as it is, then what a PUT of it would carry.
   */
  private patched(req: Req, row: R, up: Row[], paths: PatchPaths) {
    const shown = this.toMessage(row, up);
    const merged = patchedMessage(this.info.message, shown, bodyOf(req, this.info.body), paths);
    const writable = new Set(writableFields(this.info.message, "update").map((f) => f.name));
    const body = Object.fromEntries(Object.entries(merged).filter(([name]) => writable.has(name)));
    return this.parse({ ...req, [this.info.body ?? ""]: body }, this.keptOf(shown));
  }

  /** The item's values (`shown`, its message) of the fields accepted at POST only (IMMUTABLE), but its id (the path names it). */
  private keptOf(shown: Record<string, unknown>): Record<string, unknown> {
    const fields = this.info.message.fields.filter((f) => f.name !== "id" && f.behaviors.has("IMMUTABLE") && !f.behaviors.has("OUTPUT_ONLY"));
    return Object.fromEntries(fields.filter((f) => shown[f.name] !== undefined).map((f) => [f.name, shown[f.name]]));
  }

  /**
   * Replaces the item's writable columns (a PUT), or merges a patch into them (a PATCH, PATCH_KEY);
   * a changed path is announced as a move.
   */
  async update(q: Queryable, emit: Emit, asked: Req, ctx?: CallContext, finish?: Finish) {
    const req = this.withEmptyLists(asked, ctx);
    // A missing item is a 404 before its body is judged. References are locked before the
    // row itself, in the order a delete of what they name takes its locks.
    const { row: current, up } = await this.locate(q, req);
    const paths = readPatchPaths(ctx?.metadata.get(PATCH_KEY)[0]);
    let body = paths ? this.patched(req, current, up, paths) : this.parse(req, this.keptOf(this.toMessage(current, up)));
    await this.spec.references?.(q, body, { ctx, current });
    const locked = await this.readRow(q, { id: current["id"] }, "update");
    if (!locked) throw this.missing(req, up);
    await checkConditions(ctx, () => this.etagOf(locked, up));
    // A patch merges into the item as it is locked: a write that landed since it was read is kept.
    if (paths && JSON.stringify(locked) !== JSON.stringify(current)) {
      body = this.patched(req, locked, up, paths);
      await this.spec.references?.(q, body, { ctx, current: locked });
    }
    await this.spec.validate?.(q, body, { up, current: locked, ctx });
    const cols = await this.columnsOf(body, req);
    await this.checkQuota(q, cols, locked);
    const sets = Object.keys(cols).map((c, i) => `${assertIdentifier(c)} = $${i + 2}`);
    const sql = `UPDATE ${this.spec.table} SET ${sets.join(", ")} WHERE id = $1 RETURNING *`;
    const values = [current["id"], ...Object.values(cols)];
    // As a create's insert (see there), the update ends the transaction when the item's change
    // can be told from the row as locked and the columns written: one round trip for the
    // update, its outbox rows and the COMMIT.
    const last = finish && this.announcedFromColumns ? finish : undefined;
    if (last) this.announceUpdate(emit, locked, { ...locked, ...cols }, up);
    const write = async () => ((last ? await last(sql, values) : await q.query<R>(sql, values)).rows[0] as R | undefined);
    const row = await this.reread(q, (await this.writing(body, current["id"], write))!);
    if (!last) this.announceUpdate(emit, locked, row, up);
    await this.spec.changed?.(q, row, "updated", emit, body, locked);
    // What `changed` wrote may show in the item's derived columns.
    return this.toMessage(this.spec.changed ? await this.reread(q, row) : row, up);
  }

  /** Deletes the item, its children first (each announced), then what `cascade` takes. */
  async remove(q: Queryable, emit: Emit, req: Req, ctx: CallContext, finish?: Finish): Promise<void> {
    const { row, up } = await this.locate(q, req, "update");
    await checkConditions(ctx, () => this.etagOf(row, up));
    await this.spec.cascade?.(q, row, emit, ctx);
    await this.removeChildren(q, emit, row, up);
    const sql = `DELETE FROM ${this.spec.table} WHERE id = $1`;
    emit(this.change("deleted", row, up));
    // With no hook reacting to it, the delete ends the transaction: one round trip with its outbox rows and the COMMIT.
    if (finish && !this.spec.changed) {
      await finish(sql, [row["id"]]);
      return;
    }
    await q.query(sql, [row["id"]]);
    await this.spec.changed?.(q, row, "deleted", emit);
  }

  /**
   * Whether a write of this kind can be announced before its statement runs, from the columns
   * written: a top-level item (its path is its id) read from its table as written (no view, no
   * rendering), with no hook reacting to the write. Its create and update then end the transaction.
   */
  private get announcedFromColumns(): boolean {
    return !this.spec.parentColumn && !this.spec.view && !this.spec.render && !this.spec.changed;
  }

  /** An update's changes: `updated`, or `deleted` and `created` when its path changed; its tenant's move announced again (TENANT_MOVED). */
  private announceUpdate(emit: Emit, locked: R, row: Row, up: Row[]): void {
    const before = this.change("deleted", locked, up);
    const after = this.change("updated", row as R, up);
    if (before.path === after.path) emit(after);
    else {
      emit(before);
      emit({ ...after, event: "created" });
    }
    if (before.tenantId !== after.tenantId) emit({ ...after, topic: TENANT_MOVED });
  }

  private async removeChildren(q: Queryable, emit: Emit, row: Row, up: Row[]): Promise<void> {
    for (const child of this.children) {
      const col = assertIdentifier(child.spec.parentColumn!);
      const rows = (await q.query(`SELECT * FROM ${child.spec.table} WHERE ${col} = $1 ORDER BY id FOR UPDATE`, [row["id"]])).rows;
      for (const r of rows) await child.removeChildren(q, emit, r, [row, ...up]);
      await q.query(`DELETE FROM ${child.spec.table} WHERE ${col} = $1`, [row["id"]]);
      for (const r of rows) emit(child.change("deleted", r, [row, ...up]));
    }
  }

  /** The kind's own RPCs, named by the proto's HTTP bindings. */
  handlers(store: Store): Handlers {
    const { rpcs } = this.info;
    const out: Handlers = {};
    if (rpcs.list) out[rpcs.list] = (req: Req, ctx: CallContext) => this.listFor(store.pool, req, ctx);
    const reads = preparedReads(store.pool);
    if (rpcs.get) out[rpcs.get] = async (req: Req) => {
      const { row, up } = await this.locate(reads, req);
      return this.toMessage(row, up);
    };
    if (rpcs.create) out[rpcs.create] = (req: Req, ctx: CallContext) => store.tx(ctx, (q, emit, finish) => this.create(q, emit, req, {}, finish, ctx));
    if (rpcs.update) out[rpcs.update] = (req: Req, ctx: CallContext) => store.tx(ctx, (q, emit, finish) => this.update(q, emit, req, ctx, finish));
    if (rpcs.delete) {
      out[rpcs.delete] = async (req: Req, ctx: CallContext) => {
        await store.tx(ctx, (q, emit, finish) => this.remove(q, emit, req, ctx, finish));
        return {};
      };
    }
    return out;
  }
}
