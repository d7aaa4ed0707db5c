// Trace Request (v1): how it is stored and how it reads back. Its fields' rules are
// tracing.proto's; the condition is the client's JSON object, passed on by the gateway as text
// and returned as is; `limit` and `creationTimestampMs` are 64-bit and travel as decimal strings
// end to end. What no rule in the proto states is checked here, by name: that the condition is a
// JSON object, and that the traced device exists (devices.ts).
import { ApiError, type Checked, Resource, type ServiceContext } from "@vnm/kit";
import { requireDevice } from "./devices.ts";

const MAX_LIMIT = "9223372036854775807";

/** A trace's body once it passed its rules (tracing.proto); 64-bit values as decimal strings. */
type TraceBody = Checked<"vnm.tracing.v1.TraceRequest">;

interface TraceRow {
  id: string;
  name: string;
  device_type: string;
  device_id: string;
  condition: string;
  enabled: boolean;
  creation_timestamp_ms: string;
  trace_limit: string;
}

function isJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/**
 * The condition is the text of a JSON object (no rule parses JSON). The gateway passes a checked
 * object on; a caller reaching the service directly is checked here.
 */
function conditionIsJsonObject(t: TraceBody): void {
  if (!isJsonObject(t.condition)) throw ApiError.invalid([{ property: "condition", message: "must be a JSON object" }]);
}

export function traceRequests(svc: Pick<ServiceContext, "call">) {
  return new Resource({
    proto: "vnm.tracing.v1.TraceRequest",
    table: "trace_requests",
    // PUT replaces: an absent timestamp is the time of this write, an absent limit the default.
    columns: (t) => ({
      name: t.name,
      device_type: t.deviceType,
      device_id: t.deviceId,
      condition: t.condition,
      enabled: t.enabled ?? false,
      creation_timestamp_ms: t.creationTimestampMs ?? String(Date.now()),
      trace_limit: t.limit ?? MAX_LIMIT,
    }),
    render: (r: TraceRow) => ({
      id: r.id,
      name: r.name,
      deviceType: r.device_type,
      deviceId: r.device_id,
      condition: r.condition,
      enabled: r.enabled,
      creationTimestampMs: r.creation_timestamp_ms,
      limit: r.trace_limit,
    }),
    // The condition must be a JSON object; the device must exist (its service says).
    validate: async (q, t) => {
      conditionIsJsonObject(t);
      await requireDevice(svc, q, t.deviceType, t.deviceId);
    },
  });
}
