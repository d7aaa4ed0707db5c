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

export class ApiError extends Error {
  override name = "ApiError";
  readonly code: status;
  readonly violations: Violation[];

  constructor(code: status, message: string, violations: Violation[] = [], options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.violations = violations;
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
