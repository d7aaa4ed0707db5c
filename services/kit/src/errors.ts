// One error type for every part: a gRPC status code, a message and field violations, and the
// one place where anything thrown becomes one. It travels over gRPC as the status code, the
// status details (message) and a trailing metadata entry holding the violations as JSON.
import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { PG } from "./db.ts";
import { stringMember } from "./values.ts";

export interface Violation {
  property: string;
  message: string;
}

export const VIOLATIONS_KEY = "vnm-violations";
export const ORIGIN_KEY = "vnm-origin";
/** Metadata key of a failed If-Match: the item's tag as it is now. */
export const ETAG_KEY = "vnm-etag";
/** Seconds to wait before trying again, on a RESOURCE_EXHAUSTED answer that says. */
export const RETRY_AFTER_KEY = "vnm-retry-after";

/**
 * Postgres errors (SQLSTATE, or a socket error's code) that mean the database is out of reach; so
 * does any of class 08 (connection exception) and class 53 (insufficient resources: too many
 * connections, out of memory, disk full), which the database answers while it cannot serve.
 */
const DB_DOWN = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "57P01", "57P02", "57P03"]);
const DB_DOWN_MESSAGE = /timeout exceeded when trying to connect|Connection terminated|not queryable|terminating connection/;
/** Postgres conflicts between concurrent transactions. */
const DB_CONFLICT = new Set<string>([PG.foreignKeyViolation, PG.serializationFailure, PG.deadlock]);

/**
 * The one error of every part: a gRPC status code, a message a client may read, and field
 * violations. How a client sees it over HTTP is the gateway's business alone (one table there).
 */
export class ApiError extends Error {
  override name = "ApiError";
  readonly code: status;
  readonly violations: Violation[];
  /** The item's current tag, when the error is a precondition (If-Match) that failed. */
  readonly etag: string | undefined;
  /** Seconds a client should wait before trying again (a limit reached), when known. */
  retryAfter?: number;

  constructor(code: status, message: string, violations: Violation[] = [], options?: { cause?: unknown; etag?: string }) {
    super(message, options);
    this.code = code;
    this.violations = violations;
    this.etag = options?.etag;
  }

  /** The item changed since the client read it: its tag is not the one If-Match names (412). */
  static changed(etag: string): ApiError {
    return new ApiError(status.FAILED_PRECONDITION, `The item has changed since it was read: its ETag is now ${etag}`, [], { etag });
  }
  /** The item exists with a tag If-None-Match names ("*": any item), on a write that asked otherwise (412). */
  static exists(etag: string): ApiError {
    return new ApiError(status.FAILED_PRECONDITION, `The item exists and If-None-Match names it: its ETag is ${etag}`, [], { etag });
  }

  static invalid(violations: Violation[], message = "Validation error(s) found"): ApiError {
    return new ApiError(status.INVALID_ARGUMENT, message, violations);
  }
  static badRequest(message: string): ApiError {
    return new ApiError(status.INVALID_ARGUMENT, message);
  }
  static notFound(message: string): ApiError {
    return new ApiError(status.NOT_FOUND, message);
  }
  /**
   * The 404 of an item that is missing or hidden (another tenant's): the one text for both, so
   * that an answer never tells which (the existence oracle's guarantee, docs/security.md).
   */
  static noItem(kind: string, id: unknown): ApiError {
    return new ApiError(status.NOT_FOUND, `There is no ${kind} with ID ${String(id)}.`);
  }
  static conflict(message: string): ApiError {
    return new ApiError(status.ALREADY_EXISTS, message);
  }
  static unauthenticated(message: string): ApiError {
    return new ApiError(status.UNAUTHENTICATED, message);
  }
  static forbidden(message: string): ApiError {
    return new ApiError(status.PERMISSION_DENIED, message);
  }
  static exhausted(message: string, retryAfterSeconds?: number): ApiError {
    const e = new ApiError(status.RESOURCE_EXHAUSTED, message);
    if (retryAfterSeconds !== undefined) e.retryAfter = retryAfterSeconds;
    return e;
  }
  static unavailable(message: string): ApiError {
    return new ApiError(status.UNAVAILABLE, message);
  }

  /**
   * Anything thrown, as an ApiError: itself; a gRPC error as its code, message and violations
   * (when the channel failed rather than the service answering, named after `peer`: the service
   * called); a database out of reach as UNAVAILABLE, a conflict between transactions as ABORTED;
   * anything else as INTERNAL with a generic message (the cause is kept for the log).
   */
  static from(err: unknown, peer?: string): ApiError {
    if (err instanceof ApiError) return err;
    if (isServiceError(err)) {
      const answered = err.metadata.get(ORIGIN_KEY)[0] !== undefined;
      if (!answered && peer && err.code === status.UNAVAILABLE) return new ApiError(status.UNAVAILABLE, `The ${peer} service is unavailable; try again later`, [], { cause: err });
      if (!answered && peer && err.code === status.DEADLINE_EXCEEDED) return new ApiError(status.DEADLINE_EXCEEDED, `The ${peer} service did not answer in time`, [], { cause: err });
      const etag = err.metadata.get(ETAG_KEY)[0];
      const e = new ApiError(err.code, err.details || err.message, readViolations(err.metadata), { cause: err, etag: typeof etag === "string" ? etag : undefined });
      const retryAfter = Number(err.metadata.get(RETRY_AFTER_KEY)[0]);
      if (retryAfter > 0) e.retryAfter = retryAfter;
      return e;
    }
    const code = stringMember(err, "code");
    if ((code && (DB_DOWN.has(code) || code.startsWith("08") || code.startsWith("53"))) || DB_DOWN_MESSAGE.test(stringMember(err, "message") ?? "")) {
      return new ApiError(status.UNAVAILABLE, "The database is unavailable; try again later", [], { cause: err });
    }
    if (code && DB_CONFLICT.has(code)) return new ApiError(status.ABORTED, "A concurrent change got in the way of this request; try again", [], { cause: err });
    return new ApiError(status.INTERNAL, "An internal error occurred", [], { cause: err });
  }

  /** The grpc-js error object a server handler passes to its callback. */
  toServiceError(): Partial<ServiceError> {
    const metadata = new Metadata();
    // Tells a caller this status is the service's own answer, not the channel's.
    metadata.set(ORIGIN_KEY, "service");
    if (this.violations.length > 0) metadata.set(VIOLATIONS_KEY, JSON.stringify(this.violations));
    if (this.etag !== undefined) metadata.set(ETAG_KEY, this.etag);
    if (this.retryAfter !== undefined) metadata.set(RETRY_AFTER_KEY, String(this.retryAfter));
    return { code: this.code, details: this.message, metadata };
  }
}

export function isServiceError(err: unknown): err is ServiceError {
  return (
    typeof err === "object" &&
    err !== null &&
    "code" in err &&
    typeof err.code === "number" &&
    "metadata" in err &&
    err.metadata instanceof Metadata
  );
}

/** A violation as a peer sent it (property and message), or none when it is not one. */
function violationOf(v: unknown): Violation[] {
  const property = stringMember(v, "property");
  const message = stringMember(v, "message");
  return property !== undefined && message !== undefined ? [{ property, message }] : [];
}

function readViolations(metadata: Metadata | undefined): Violation[] {
  const raw = metadata?.get(VIOLATIONS_KEY)[0];
  if (typeof raw !== "string") return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? parsed.flatMap((v: unknown) => violationOf(v)) : [];
  } catch {
    return [];
  }
}
