// Errors as the client sees them: the kit's ApiError as an HTTP status (one table from gRPC
// codes, or the status the error names), the Error-v1 body, and its headers.
import { status as Code } from "@grpc/grpc-js";
import { ApiError, type Logger } from "@vnm/kit";
import type { ApiResponse } from "./context.ts";
import { ERROR_TYPE } from "./media.ts";

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

/** The HTTP status of an error: the one it names, else its gRPC code's. */
export function httpStatusOf(err: ApiError): number {
  return err.httpStatus ?? HTTP_STATUS[err.code] ?? 500;
}

export function sendError(res: ApiResponse, err: ApiError, requestId: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const status = httpStatusOf(err);
  const body: Record<string, unknown> = { message: err.message, code: status };
  if (err.violations.length > 0) body["violations"] = err.violations;
  body["requestId"] = requestId;
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  send(res, status, ERROR_TYPE, JSON.stringify(body));
}

/**
 * Writes a JSON body with its media type exactly as named (vendor types keep their case), and
 * `headers` (a flat name, value list) with it.
 */
export function send(res: ApiResponse, status: number, type: string, body: string | Buffer, headers: string[] = []): void {
  const length = typeof body === "string" ? Buffer.byteLength(body) : body.length;
  res.writeHead(status, ["Content-Type", type, "Content-Length", String(length), ...headers]);
  res.end(body);
}

/**
 * The answer for anything thrown while serving a request. A lost or silent service is a 503 or
 * 504 naming it, with Retry-After; anything unexpected is a 500 that only gives the request id
 * (the cause goes to the log).
 */
export function toHttpError(err: unknown, requestId: string, log: Logger): ApiError {
  const e = ApiError.from(err);
  const status = httpStatusOf(e);
  if (status === 429 || status === 503 || status === 504) return ApiError.http(status, e.message, [], { "Retry-After": "1", ...e.headers });
  if (status >= 500) {
    log.error("request failed", { requestId, err: e.cause ?? e });
    return ApiError.http(500, `An internal error occurred (request ${requestId})`);
  }
  return e;
}
