// Trace Request (v1): what a client may send, how it is stored and how it reads back. The
// condition is the client's JSON object, passed on by the gateway as text and returned as is;
// `limit` and `creationTimestampMs` are 64-bit and travel as decimal strings end to end.
import { Resource, type ServiceContext, text, uuid } from "@vnm/kit";
import { z } from "zod";
import { requireBridge } from "./bridges.ts";

const DEVICE_TYPES = ["BRIDGE", "PORT", "ROUTER"] as const;
const MAX_LIMIT = "9223372036854775807";

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

const input = z.object({
  id: uuid().optional(),
  name: text(255).refine((s) => s.length > 0, "must not be empty"),
  deviceType: z.enum(DEVICE_TYPES, { error: `must be one of ${DEVICE_TYPES.join(", ")}` }),
  deviceId: uuid(),
  // The gateway passes a checked object on; a caller reaching the service directly is checked too.
  condition: z.string().refine(isJsonObject, "must be a JSON object"),
  enabled: z.boolean().optional(),
  // 64-bit integers as decimal strings: the gateway has checked the signed 64-bit range.
  creationTimestampMs: z.string().optional(),
  limit: z.string().optional(),
});

export function traceRequests(svc: Pick<ServiceContext, "call">) {
  return new Resource({
    proto: "vnm.tracing.v1.TraceRequest",
    table: "trace_requests",
    input,
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
    // A BRIDGE must exist (the bridge service says); PORT and ROUTER ids are syntax-checked only.
    validate: async (q, t) => {
      if (t.deviceType === "BRIDGE") await requireBridge(svc, q, t.deviceId);
    },
  });
}
