// Errors as the client sees them: an HTTP status, the Error-v1 body, optional headers.
import { status as Code } from "@grpc/grpc-js";
import { ApiError, type Logger, type Violation } from "@vnm/kit";
import type { Response } from "express";
import { ERROR_TYPE } from "./media.ts";

export class HttpError extends Error {
  override name = "HttpError";
  readonly status: number;
  readonly violations: Violation[];
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, violations: Violation[] = [], headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.violations = violations;
    this.headers = headers;
  }
}

/** gRPC code -> HTTP status, as grpc-gateway maps them. */
export const HTTP_STATUS: Record<number, number> = {
  [Code.OK]: 200,
  [Code.CANCELLED]: 499,
  [Code.UNKNOWN]: 500,
  [Code.INVALID_ARGUMENT]: 400,
  [Code.DEADLINE_EXCEEDED]: 504,
  [Code.NOT_FOUND]: 404,
  [Code.ALREADY_EXISTS]: 409,
  [Code.PERMISSION_DENIED]: 403,
  [Code.RESOURCE_EXHAUSTED]: 429,
  [Code.FAILED_PRECONDITION]: 400,
  [Code.ABORTED]: 409,
  [Code.OUT_OF_RANGE]: 400,
  [Code.UNIMPLEMENTED]: 501,
  [Code.INTERNAL]: 500,
  [Code.UNAVAILABLE]: 503,
  [Code.DATA_LOSS]: 500,
  [Code.UNAUTHENTICATED]: 401,
};

export function sendError(res: Response, err: HttpError, requestId: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body: Record<string, unknown> = { message: err.message, code: err.status };
  if (err.violations.length > 0) body["violations"] = err.violations;
  body["requestId"] = requestId;
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  send(res, err.status, ERROR_TYPE, JSON.stringify(body));
}

/** Writes a JSON body with its media type exactly as named (vendor types keep their case). */
export function send(res: Response, status: number, type: string, body: string | Buffer): void {
  res.statusCode = status;
  res.setHeader("Content-Type", type);
  res.setHeader("Content-Length", typeof body === "string" ? Buffer.byteLength(body) : body.length);
  res.end(body);
}

/**
 * The answer for anything thrown while serving a request. A lost or silent service is a 503 or
 * 504 naming it, with Retry-After; anything unexpected is a 500 that only gives the request id
 * (the cause goes to the log).
 */
export function toHttpError(err: unknown, requestId: string, log: Logger): HttpError {
  if (err instanceof HttpError) return err;
  const e = ApiError.from(err);
  const status = HTTP_STATUS[e.code] ?? 500;
  if (status === 503 || status === 504) return new HttpError(status, e.message, [], { "Retry-After": "1" });
  if (status >= 500) {
    log.error("request failed", { requestId, err: e.cause ?? e });
    return new HttpError(500, `An internal error occurred (request ${requestId})`);
  }
  return new HttpError(status, e.message, e.violations);
}
