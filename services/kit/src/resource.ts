// One top-level resource kept in one table keyed by its UUID: the SQL and the five REST
// handlers (list, get, create, replace, delete) derived from a declaration of its columns.
// Kinds differ only in their columns, their reference checks and their cascades.
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { z } from "zod";
import type { Change, ChangeEvent } from "./changes.ts";
import { assertIdentifier, type Queryable } from "./db.ts";
import { ApiError } from "./errors.ts";
import type { CallContext, Handlers, Store } from "./service.ts";
import { isUuid, parseInput, pathId } from "./validate.ts";

type Emit = (c: Change) => void;

export interface ResourceSpec<S extends z.ZodType, R extends pg.QueryResultRow> {
  /** Kind and display name ("Pool"): change notifications and messages. */
  kind: string;
  /** Table, with columns id (uuid primary key) and seq (creation order). */
  table: string;
  /** Collection path below the API root ("/pools"); an item lives at <path>/<id>. */
  path: string;
  /** What a client may send (POST and PUT); `id` is read on POST only. */
  input: S;
  /** Values of the writable columns, defaults applied to what the body left out (PUT replaces). */
  columns: (body: z.output<S>) => Record<string, unknown>;
  /** Row -> proto message; null columns are left out (the gateway shows them as null). */
  message: (row: R) => Record<string, unknown | null>;
  /** The column holding the owning tenant, carried by the change notifications. */
  tenantColumn?: string;
}

/** Hooks of one kind's write handlers, run inside the write's transaction. */
export interface WriteHooks<S extends z.ZodType> {
  /** Checks (and locks) what the body refers to, before the row is written. */
  references?: (q: Queryable, body: z.output<S>) => Promise<void>;
  /** Removes or updates what depends on the item (given locked), announcing each row, before it is deleted. */
  cascade?: (q: Queryable, id: string, emit: Emit, row: pg.QueryResultRow) => Promise<void>;
}

/** A page of a list: at most `limit` items after the item `marker`. */
export interface Page {
  limit?: number;
  marker?: string;
}

export const MAX_PAGE = 1000;

/** The page a list request asks for (its `limit` and `marker` fields); 400 when malformed. */
export function pageOf(req: Record<string, unknown>): Page {
  const page: Page = {};
  if (req["limit"] !== undefined) {
    const limit = Number(req["limit"]);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw ApiError.invalid([{ property: "limit", message: `must be between 1 and ${MAX_PAGE}` }]);
    }
    page.limit = limit;
  }
  if (req["marker"] !== undefined && req["marker"] !== "") {
    if (!isUuid(req["marker"])) throw ApiError.invalid([{ property: "marker", message: "must be the id of an item of this list" }]);
    page.marker = (req["marker"] as string).toLowerCase();
  }
  return page;
}

/**
 * Reads one page of `table` in creation order (seq), optionally where `column` = `value`.
 * An unknown marker is a 400. `next_marker` is set when more items follow.
 */
export async function listPage<R extends pg.QueryResultRow>(
  q: Queryable,
  table: string,
  page: Page,
  where?: { column: string; value: string },
): Promise<{ rows: R[]; next_marker?: string }> {
  const params: unknown[] = [];
  const conditions: string[] = [];
  if (where) {
    params.push(where.value);
    conditions.push(`${assertIdentifier(where.column)} = $${params.length}`);
  }
  if (page.marker) {
    const at = await q.query<{ seq: string }>(`SELECT seq FROM ${assertIdentifier(table)} WHERE id = $1`, [page.marker]);
    if (!at.rows[0]) throw ApiError.invalid([{ property: "marker", message: "must be the id of an item of this list" }]);
    params.push(at.rows[0].seq);
    conditions.push(`seq > $${params.length}`);
  }
  let sql = `SELECT * FROM ${assertIdentifier(table)}${conditions.length ? ` WHERE ${conditions.join(" AND ")}` : ""} ORDER BY seq`;
  if (page.limit) sql += ` LIMIT ${page.limit + 1}`;
  const rows = (await q.query<R>(sql, params)).rows;
  if (page.limit && rows.length > page.limit) {
    rows.length = page.limit;
    return { rows, next_marker: String(rows[rows.length - 1]!["id"]) };
  }
  return { rows };
}

/** A list filter: the request field (a query parameter) and the column it matches. */
export interface ListFilter {
  field: string;
  column: string;
}

export class Resource<S extends z.ZodType, R extends pg.QueryResultRow> {
  readonly spec: ResourceSpec<S, R>;

  constructor(spec: ResourceSpec<S, R>) {
    assertIdentifier(spec.table);
    this.spec = spec;
  }

  notFound(id: string): ApiError {
    return ApiError.notFound(`There is no ${this.spec.kind} with ID ${id}.`);
  }

  change(event: ChangeEvent, id: string, row?: pg.QueryResultRow): Change {
    const tenant = this.spec.tenantColumn && row ? (row[this.spec.tenantColumn] as string | null) : null;
    return { kind: this.spec.kind, event, id, path: `${this.spec.path}/${id}`, tenantId: tenant ?? null };
  }

  toMessage(row: R): Record<string, unknown> {
    return Object.fromEntries(Object.entries(this.spec.message(row)).filter(([, v]) => v !== null));
  }

  /** The items in creation order, optionally those whose `column` equals `value`, a page at a time. */
  async list(
    q: Queryable,
    where?: { column: string; value: string },
    page: Page = {},
  ): Promise<{ items: Record<string, unknown>[]; next_marker?: string }> {
    const { rows, next_marker } = await listPage<R>(q, this.spec.table, page, where);
    const out: { items: Record<string, unknown>[]; next_marker?: string } = { items: rows.map((row) => this.toMessage(row)) };
    if (next_marker) out.next_marker = next_marker;
    return out;
  }

  /**
   * The item (404 when missing). In a transaction, "key share" keeps it from being deleted
   * until the caller commits (a reference to it is being written); "update" is for deleting it.
   */
  async find(q: Queryable, id: string, lock?: "key share" | "update"): Promise<R> {
    const r = await q.query<R>(`SELECT * FROM ${this.spec.table} WHERE id = $1${lock ? ` FOR ${lock.toUpperCase()}` : ""}`, [id]);
    const row = r.rows[0];
    if (!row) throw this.notFound(id);
    return row;
  }

  /** The id of an existing item named by a path segment (404 when malformed or missing). */
  async existing(q: Queryable, rawId: unknown): Promise<string> {
    const id = pathId(rawId, this.spec.kind);
    await this.find(q, id);
    return id;
  }

  private async insert(q: Queryable, id: string, body: z.output<S>): Promise<R> {
    const cols = this.spec.columns(body);
    const names = Object.keys(cols).map(assertIdentifier);
    const r = await q.query<R>(
      `INSERT INTO ${this.spec.table} (id, ${names.join(", ")}) VALUES ($1, ${names.map((_, i) => `$${i + 2}`).join(", ")})
       ON CONFLICT (id) DO NOTHING RETURNING *`,
      [id, ...Object.values(cols)],
    );
    const row = r.rows[0];
    if (!row) throw ApiError.conflict(`A ${this.spec.kind} with ID ${id} already exists.`);
    return row;
  }

  private async replace(q: Queryable, id: string, body: z.output<S>): Promise<R> {
    const cols = this.spec.columns(body);
    const sets = Object.keys(cols).map((c, i) => `${assertIdentifier(c)} = $${i + 2}`);
    const r = await q.query<R>(`UPDATE ${this.spec.table} SET ${sets.join(", ")} WHERE id = $1 RETURNING *`, [
      id,
      ...Object.values(cols),
    ]);
    const row = r.rows[0];
    if (!row) throw this.notFound(id);
    return row;
  }

  /**
   * Parses a POST body (overridden by `fixed`, e.g. a parent from the path) and writes it,
   * with its reference checks, in the caller's transaction.
   */
  async create(q: Queryable, emit: Emit, raw: unknown, hooks: WriteHooks<S>, fixed: Partial<z.output<S>> = {}) {
    const body = { ...(parseInput(this.spec.input, raw ?? {}) as object), ...fixed } as z.output<S>;
    const id = (body as { id?: string }).id ?? randomUUID();
    await hooks.references?.(q, body);
    const row = await this.insert(q, id, body);
    emit(this.change("created", id, row));
    return this.toMessage(row);
  }

  /**
   * Handlers named <verb><Name>: ListPools, GetPool, CreatePool, UpdatePool, DeletePool.
   * `filter` lets the list take a query parameter (?tenant_id=) matched against a column.
   */
  handlers(
    store: Store,
    names: { one: string; many: string; body: string },
    hooks: WriteHooks<S> = {},
    filter?: ListFilter,
  ): Handlers {
    const { kind } = this.spec;
    return {
      [`List${names.many}`]: async (req: Record<string, unknown>) => {
        const value = filter ? req[filter.field] : undefined;
        const where = filter && typeof value === "string" ? { column: filter.column, value } : undefined;
        return this.list(store.pool, where, pageOf(req));
      },

      [`Get${names.one}`]: async (req: { id: string }) => this.toMessage(await this.find(store.pool, pathId(req.id, kind))),

      [`Create${names.one}`]: async (req: Record<string, unknown>, ctx: CallContext) =>
        store.tx(ctx, (q, emit) => this.create(q, emit, req[names.body], hooks)),

      [`Update${names.one}`]: async (req: Record<string, unknown>, ctx: CallContext) => {
        const id = pathId(req["id"], kind);
        return store.tx(ctx, async (q, emit) => {
          // A missing item is a 404 before its body is judged. References are locked before
          // the row itself, in the order a delete of what they name takes its locks.
          await this.find(q, id);
          const body = parseInput(this.spec.input, req[names.body] ?? {});
          await hooks.references?.(q, body);
          const row = await this.replace(q, id, body);
          emit(this.change("updated", id, row));
          return this.toMessage(row);
        });
      },

      [`Delete${names.one}`]: async (req: { id: string }, ctx: CallContext) => {
        const id = pathId(req.id, kind);
        return store.tx(ctx, async (q, emit) => {
          const row = await this.find(q, id, "update");
          await hooks.cascade?.(q, id, emit, row);
          await q.query(`DELETE FROM ${this.spec.table} WHERE id = $1`, [id]);
          emit(this.change("deleted", id, row));
          return {};
        });
      },
    };
  }
}
