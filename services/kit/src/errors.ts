// One error type for every service: a gRPC status code, a message and field violations.
// It travels over gRPC as the status code, the status details (message) and a trailing
// metadata entry holding the violations as JSON.
import { Metadata, type ServiceError, status } from "@grpc/grpc-js";

export interface Violation {
  property: string;
  message: string;
}

export const VIOLATIONS_KEY = "vnm-violations";
export const ORIGIN_KEY = "vnm-origin";

/** The gRPC code nearest to an HTTP status gRPC has no code for (405, 406, 412, 413, 415, ...). */
const NEAREST_CODE: Record<number, status> = {
  400: status.INVALID_ARGUMENT,
  401: status.UNAUTHENTICATED,
  403: status.PERMISSION_DENIED,
  404: status.NOT_FOUND,
  405: status.UNIMPLEMENTED,
  406: status.INVALID_ARGUMENT,
  409: status.ALREADY_EXISTS,
  412: status.FAILED_PRECONDITION,
  413: status.RESOURCE_EXHAUSTED,
  415: status.INVALID_ARGUMENT,
  429: status.RESOURCE_EXHAUSTED,
  503: status.UNAVAILABLE,
  504: status.DEADLINE_EXCEEDED,
};

export class ApiError extends Error {
  override name = "ApiError";
  readonly code: status;
  readonly violations: Violation[];
  /** An HTTP status the code alone cannot say (405, 406, 412, 413, 415), set at the edge. */
  readonly httpStatus?: number;
  /** HTTP headers that go with the answer (Allow, Retry-After, WWW-Authenticate, ETag). */
  readonly headers: Record<string, string>;

  constructor(
    code: status,
    message: string,
    violations: Violation[] = [],
    options?: { cause?: unknown; httpStatus?: number; headers?: Record<string, string> },
  ) {
    super(message, options);
    this.code = code;
    this.violations = violations;
    this.httpStatus = options?.httpStatus;
    this.headers = options?.headers ?? {};
  }

  /** An error the HTTP edge makes itself, with its exact status and headers. */
  static http(httpStatus: number, message: string, violations: Violation[] = [], headers: Record<string, string> = {}): ApiError {
    return new ApiError(NEAREST_CODE[httpStatus] ?? status.UNKNOWN, message, violations, { httpStatus, headers });
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
  static conflict(message: string): ApiError {
    return new ApiError(status.ALREADY_EXISTS, message);
  }
  static unauthenticated(message: string): ApiError {
    return new ApiError(status.UNAUTHENTICATED, message);
  }
  static forbidden(message: string): ApiError {
    return new ApiError(status.PERMISSION_DENIED, message);
  }
  static unavailable(message: string): ApiError {
    return new ApiError(status.UNAVAILABLE, message);
  }

  /** Turns anything thrown into an ApiError; unknown errors become INTERNAL with a generic message. */
  static from(err: unknown): ApiError {
    if (err instanceof ApiError) return err;
    if (isServiceError(err)) {
      return new ApiError(err.code, err.details || err.message, readViolations(err.metadata), { cause: err });
    }
    return new ApiError(status.INTERNAL, "An internal error occurred", [], { cause: err });
  }

  /** The grpc-js error object a server handler passes to its callback. */
  toServiceError(): Partial<ServiceError> {
    const metadata = new Metadata();
    // Tells a caller this status is the service's own answer, not the channel's.
    metadata.set(ORIGIN_KEY, "service");
    if (this.violations.length > 0) metadata.set(VIOLATIONS_KEY, JSON.stringify(this.violations));
    return { code: this.code, details: this.message, metadata };
  }
}

export function isServiceError(err: unknown): err is ServiceError {
  return (
    typeof err === "object" &&
    err !== null &&
    typeof (err as ServiceError).code === "number" &&
    (err as ServiceError).metadata instanceof Metadata
  );
}

function readViolations(metadata: Metadata | undefined): Violation[] {
  const raw = metadata?.get(VIOLATIONS_KEY)[0];
  if (typeof raw !== "string") return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? (parsed as Violation[]) : [];
  } catch {
    return [];
  }
}
