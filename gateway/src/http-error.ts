// Errors as the client sees them, in one place: the gRPC code of an ApiError as an HTTP status
// (one table), the errors only HTTP has (405, 406, 412, 413, 415, ...) as named constructors,
// the Error-v1 body, and the one function every error answer leaves through. Nothing else in the
// gateway writes an error status.
import { STATUS_CODES } from "node:http";
import { constants as H } from "node:http2";
import { status as Code } from "@grpc/grpc-js";
import { ApiError, type Logger, type Violation } from "@vnm/kit";
import type { ApiResponse } from "./context.ts";
import { perCopy } from "./kept.ts";
import { ERROR_TYPE } from "./media.ts";

/** gRPC code -> HTTP status, as grpc-gateway maps them. */
const HTTP_STATUS: Record<number, number> = {
  [Code.OK]: H.HTTP_STATUS_OK,
  [Code.CANCELLED]: 499, // the client went away (nginx's code; HTTP has none)
  [Code.UNKNOWN]: H.HTTP_STATUS_INTERNAL_SERVER_ERROR,
  [Code.INVALID_ARGUMENT]: H.HTTP_STATUS_BAD_REQUEST,
  [Code.DEADLINE_EXCEEDED]: H.HTTP_STATUS_GATEWAY_TIMEOUT,
  [Code.NOT_FOUND]: H.HTTP_STATUS_NOT_FOUND,
  [Code.ALREADY_EXISTS]: H.HTTP_STATUS_CONFLICT,
  [Code.PERMISSION_DENIED]: H.HTTP_STATUS_FORBIDDEN,
  [Code.RESOURCE_EXHAUSTED]: H.HTTP_STATUS_TOO_MANY_REQUESTS,
  [Code.FAILED_PRECONDITION]: H.HTTP_STATUS_BAD_REQUEST,
  [Code.ABORTED]: H.HTTP_STATUS_CONFLICT,
  [Code.OUT_OF_RANGE]: H.HTTP_STATUS_BAD_REQUEST,
  [Code.UNIMPLEMENTED]: H.HTTP_STATUS_NOT_IMPLEMENTED,
  [Code.INTERNAL]: H.HTTP_STATUS_INTERNAL_SERVER_ERROR,
  [Code.UNAVAILABLE]: H.HTTP_STATUS_SERVICE_UNAVAILABLE,
  [Code.DATA_LOSS]: H.HTTP_STATUS_INTERNAL_SERVER_ERROR,
  [Code.UNAUTHENTICATED]: H.HTTP_STATUS_UNAUTHORIZED,
};

/** Statuses a client should retry after a moment: they carry Retry-After. */
const RETRY_LATER = new Set<number>([H.HTTP_STATUS_TOO_MANY_REQUESTS, H.HTTP_STATUS_SERVICE_UNAVAILABLE, H.HTTP_STATUS_GATEWAY_TIMEOUT]);

/** An error the HTTP edge makes itself: its exact status and the headers that go with it. */
export class EdgeError extends ApiError {
  override name = "EdgeError";
  readonly status: number;
  readonly headers: Record<string, string>;

  private constructor(code: Code, status: number, message: string, violations: Violation[] = [], headers: Record<string, string> = {}) {
    super(code, message, violations);
    this.status = status;
    this.headers = headers;
  }

  static override badRequest(message: string, violations: Violation[] = []): EdgeError {
    return new EdgeError(Code.INVALID_ARGUMENT, H.HTTP_STATUS_BAD_REQUEST, message, violations);
  }
  /** 401 with the challenge of the scheme the client should use. */
  static challenge(message: string, challenge: string): EdgeError {
    return new EdgeError(Code.UNAUTHENTICATED, H.HTTP_STATUS_UNAUTHORIZED, message, [], { "WWW-Authenticate": challenge });
  }
  static override notFound(message: string): EdgeError {
    return new EdgeError(Code.NOT_FOUND, H.HTTP_STATUS_NOT_FOUND, message);
  }
  static methodNotAllowed(method: string, path: string, allow: readonly string[]): EdgeError {
    return new EdgeError(Code.UNIMPLEMENTED, H.HTTP_STATUS_METHOD_NOT_ALLOWED, `Method ${method} is not allowed on ${path}`, [], { Allow: allow.join(", ") });
  }
  static notAcceptable(offers: string[]): EdgeError {
    return new EdgeError(Code.INVALID_ARGUMENT, H.HTTP_STATUS_NOT_ACCEPTABLE, `None of the acceptable media types is available; this resource is served as ${offers.join(" or ")}`);
  }
  /** 412, with the item's current tag. */
  static preconditionFailed(message: string, etag: string): EdgeError {
    return new EdgeError(Code.FAILED_PRECONDITION, H.HTTP_STATUS_PRECONDITION_FAILED, message, [], { ETag: etag });
  }
  /** 413; the connection closes (the rest of the body is not read). */
  /** 413; the connection closes after it unless `keepOpen` (the rest of the body is drained). */
  static tooLarge(limit: number, keepOpen = false): EdgeError {
    return new EdgeError(Code.RESOURCE_EXHAUSTED, H.HTTP_STATUS_PAYLOAD_TOO_LARGE, `Request body is larger than the limit of ${limit} bytes`, [], keepOpen ? {} : { Connection: "close" });
  }
  static unsupportedMediaType(message: string): EdgeError {
    return new EdgeError(Code.INVALID_ARGUMENT, H.HTTP_STATUS_UNSUPPORTED_MEDIA_TYPE, message);
  }
  /** 415 for a PATCH, with the patch formats accepted (RFC 5789's Accept-Patch). */
  static unsupportedPatch(message: string, accepted: string[]): EdgeError {
    return new EdgeError(Code.INVALID_ARGUMENT, H.HTTP_STATUS_UNSUPPORTED_MEDIA_TYPE, message, [], { "Accept-Patch": accepted.join(", ") });
  }
  /** 410: what the client asks for is no longer there to give (a feed position past its retention). */
  static gone(message: string): EdgeError {
    return new EdgeError(Code.OUT_OF_RANGE, H.HTTP_STATUS_GONE, message);
  }
  static tooManyRequests(message: string, retryAfterSeconds: number): EdgeError {
    return new EdgeError(Code.RESOURCE_EXHAUSTED, H.HTTP_STATUS_TOO_MANY_REQUESTS, message, [], { "Retry-After": String(retryAfterSeconds) });
  }
  static override unavailable(message: string): EdgeError {
    return new EdgeError(Code.UNAVAILABLE, H.HTTP_STATUS_SERVICE_UNAVAILABLE, message);
  }
  static requestTimeout(message: string): EdgeError {
    return new EdgeError(Code.DEADLINE_EXCEEDED, H.HTTP_STATUS_REQUEST_TIMEOUT, message, [], { Connection: "close" });
  }
  /** A client error express or Node's parser found, with the 4xx status it named. */
  static client(status: number, message: string): EdgeError {
    return new EdgeError(Code.INVALID_ARGUMENT, status, message);
  }
  /** 500: the cause goes to the log, the client gets the request id only. */
  static internal(requestId: string): EdgeError {
    return new EdgeError(Code.INTERNAL, H.HTTP_STATUS_INTERNAL_SERVER_ERROR, `An internal error occurred (request ${requestId})`);
  }
}

/** The HTTP status of an error: the edge's own, else its gRPC code's. */
export function httpStatusOf(err: ApiError): number {
  return err instanceof EdgeError ? err.status : (HTTP_STATUS[err.code] ?? H.HTTP_STATUS_INTERNAL_SERVER_ERROR);
}

/**
 * The answer for anything thrown while serving a request: an EdgeError as it is; a service's
 * error as its status; a lost or silent service a 503 or 504 naming it; anything retryable with
 * Retry-After; anything unexpected a 500 that only gives the request id (the cause is logged).
 */
export function toHttpError(err: unknown, requestId: string, log: Logger): EdgeError | ApiError {
  const e = ApiError.from(err);
  const status = httpStatusOf(e);
  if (status >= 500 && !RETRY_LATER.has(status)) {
    log.error("request failed", { requestId, err: e.cause ?? e });
    return EdgeError.internal(requestId);
  }
  return e;
}

/** The headers an error answer carries: the edge's own, and Retry-After on anything to retry later. */
function headersOf(err: ApiError, status: number): Record<string, string> {
  const own = err instanceof EdgeError ? err.headers : {};
  return RETRY_LATER.has(status) && own["Retry-After"] === undefined ? { "Retry-After": "1", ...own } : own;
}

/** Violations an error body lists at most; the message says how many more there were. */
export const MAX_VIOLATIONS = 100;
/** The longest property name a violation repeats (a client's field name may be as long as the body). */
const MAX_PROPERTY = 256;

/** The violations an error body lists: the first MAX_VIOLATIONS, each property name cut to MAX_PROPERTY. */
function listed(violations: readonly Violation[]): Violation[] {
  return violations.slice(0, MAX_VIOLATIONS).map((v) => (v.property.length > MAX_PROPERTY ? { ...v, property: `${v.property.slice(0, MAX_PROPERTY)}...` } : v));
}

/** The Error-v1 body; of many violations only the first are listed, and the message counts the rest. */
function errorBody(err: ApiError, status: number, requestId: string): string {
  const more = err.violations.length - MAX_VIOLATIONS;
  const message = more > 0 ? `${err.message} (the first ${MAX_VIOLATIONS} of ${err.violations.length} listed; ${more} more not shown)` : err.message;
  const body: Record<string, unknown> = { message, code: status };
  if (err.violations.length > 0) body["violations"] = listed(err.violations);
  body["requestId"] = requestId;
  return JSON.stringify(body);
}

/** Every error answer leaves through here (an answer already begun is cut off instead). */
export function sendError(res: ApiResponse, err: unknown, requestId: string, log: Logger): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const e = toHttpError(err, requestId, log);
  const status = httpStatusOf(e);
  for (const [k, v] of Object.entries(headersOf(e, status))) res.setHeader(k, v);
  send(res, status, ERROR_TYPE, errorBody(e, status, requestId));
}

/** An error answer written straight to a socket that has no HTTP response (a request Node's parser refused). */
export function rawErrorAnswer(err: EdgeError, requestId: string): string {
  const body = errorBody(err, err.status, requestId);
  const headers = { "Content-Type": ERROR_TYPE, "Content-Length": String(Buffer.byteLength(body)), Connection: "close", ...err.headers };
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ""}\r\n${lines.join("")}\r\n${body}`;
}

/**
 * Bytes up to this size are written as a one-byte string: Node then writes the head and the
 * body as one string, with one `write` from a buffer on its stack (under 16 KiB in all), where
 * a Buffer goes out with the head through its stream's queue and a `writev`. A cached item
 * answer cost 6k instructions less in the gateway's main thread so (callgrind, 164.7k to
 * 159.2k), the copy into the string included.
 */
const ONE_WRITE_BYTES = 12 * 1024;

/** A kept body's one-byte string. */
const keptString = perCopy((body) => body.toString("latin1"));

/**
 * Writes a JSON body with its media type exactly as named (vendor types keep their case), and
 * `headers` (a flat name, value list) with it. A `kept` body is one the cache holds (it is sent
 * as it is many times): its one-byte string is made once, not a copy of it per answer (an 8 KB
 * gzip-coded list on every hit).
 */
export function send(res: ApiResponse, status: number, type: string, body: string | Buffer, headers: string[] = [], kept = false): void {
  const length = typeof body === "string" ? Buffer.byteLength(body) : body.length;
  res.writeHead(status, ["Content-Type", type, "Content-Length", String(length), ...headers]);
  // latin1 maps each byte to one character and back: the bytes sent are the body's own.
  if (typeof body !== "string" && length <= ONE_WRITE_BYTES) res.end(kept ? keptString(body) : body.toString("latin1"), "latin1");
  else res.end(body);
}
