// Traces with OpenTelemetry, made by hand at the few places a request crosses: the gateway's
// HTTP edge, each gRPC call (client and server, W3C traceparent in the metadata), each Postgres
// query, and each NATS publish of the outbox relay (the traceparent of the write travels in the
// outbox row). Exported over OTLP http/protobuf when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; otherwise nothing is loaded (the SDK comes in by
// dynamic import) and every helper here is a plain pass-through.
import type { IncomingMessage, ServerResponse } from "node:http";
import type * as Api from "@opentelemetry/api";
import type pg from "pg";
import { messageOf } from "./values.ts";

type Kind = "server" | "client" | "producer" | "internal";
/** Where a trace context is read from or written to: headers, metadata, a payload's fields. */
export type Carrier = Record<string, unknown>;

let otel: { api: typeof Api; tracer: Api.Tracer } | undefined;
let stopping: (() => Promise<void>) | undefined;

/** Whether spans are being made (an OTLP endpoint was configured). */
export function tracing(): boolean {
  return otel !== undefined;
}

/**
 * Starts exporting spans as `name` (OTEL_SERVICE_NAME wins) when an OTLP endpoint is set; once
 * per process (the launcher runs several services in one). Returns a flush-and-stop function.
 */
export async function startTelemetry(name: string, env: NodeJS.ProcessEnv = process.env): Promise<() => Promise<void>> {
  if (stopping) return stopping;
  const base = env["OTEL_EXPORTER_OTLP_ENDPOINT"];
  const url = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] || (base ? `${base.replace(/\/$/, "")}/v1/traces` : "");
  if (!url || env["OTEL_SDK_DISABLED"] === "true") return async () => {};
  const [api, node, sdk, otlp, resources, conventions] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/exporter-trace-otlp-proto"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/semantic-conventions"),
  ]);
  const provider = new node.NodeTracerProvider({
    resource: resources.resourceFromAttributes({ [conventions.ATTR_SERVICE_NAME]: env["OTEL_SERVICE_NAME"] || name }),
    spanProcessors: [new sdk.BatchSpanProcessor(new otlp.OTLPTraceExporter({ url }))],
  });
  // The AsyncLocalStorage context manager and the W3C trace-context propagator.
  provider.register();
  otel = { api, tracer: api.trace.getTracer("vnm") };
  stopping = () => provider.shutdown();
  return stopping;
}

function kindOf(api: typeof Api, kind: Kind): Api.SpanKind {
  return { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT, producer: api.SpanKind.PRODUCER, internal: api.SpanKind.INTERNAL }[kind];
}

function finish(api: typeof Api, span: Api.Span, err?: unknown): void {
  if (err) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: messageOf(err) });
  }
  span.end();
}

/**
 * Runs `fn` inside a span (the current one's child, or `parent`'s when a carrier holding a
 * traceparent is given; a function giving the carrier is only called when tracing is on).
 * Without tracing, just runs `fn`.
 */
export function traced<T>(name: string, kind: Kind, attributes: Api.Attributes, fn: () => Promise<T>, parent?: Carrier | (() => Carrier)): Promise<T> {
  if (!otel) return fn();
  const { api, tracer } = otel;
  const carrier = typeof parent === "function" ? parent() : parent;
  const ctx = carrier ? api.propagation.extract(api.context.active(), carrier) : api.context.active();
  return tracer.startActiveSpan(name, { kind: kindOf(api, kind), attributes }, ctx, async (span) => {
    try {
      const result = await fn();
      finish(api, span);
      return result;
    } catch (err) {
      finish(api, span, err);
      throw err;
    }
  });
}

/** The current trace context as W3C fields (traceparent, tracestate); empty without tracing. */
export function traceFields(): Record<string, string> {
  const fields: Record<string, string> = {};
  otel?.api.propagation.inject(otel.api.context.active(), fields);
  return fields;
}

/**
 * Express-style middleware: one server span per HTTP request, continuing the client's
 * traceparent, named after its route template once answered (res.locals.route).
 */
export function httpSpans() {
  return (req: IncomingMessage, res: ServerResponse & { locals?: Record<string, unknown> }, next: () => void): void => {
    if (!otel) {
      next();
      return;
    }
    const { api, tracer } = otel;
    const parent = api.propagation.extract(api.ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(req.method ?? "HTTP", { kind: api.SpanKind.SERVER, attributes: { "http.request.method": req.method ?? "" } }, parent);
    const ctx = api.trace.setSpan(parent, span);
    res.on("finish", () => {
      const route = res.locals?.["route"];
      if (typeof route === "string") {
        span.setAttribute("http.route", route);
        span.updateName(`${req.method} ${route}`);
      }
      span.setAttribute("http.response.status_code", res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR });
      span.end();
    });
    // The body arrives on the request's events: bind them, or parsing loses the context.
    api.context.bind(ctx, req);
    api.context.bind(ctx, res);
    api.context.with(ctx, next);
  };
}

/** A client span around every query of the pool's connections (promise and callback forms). */
export function tracePool(pool: pg.Pool): void {
  if (!otel) return;
  const { api, tracer } = otel;
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { text?: string; submit?: unknown };
      if (typeof first === "object" && typeof first?.submit === "function") return query(...args);
      const text = typeof first === "string" ? first : (first?.text ?? "");
      const span = tracer.startSpan(`pg ${text.trimStart().split(/\s/, 1)[0]?.toUpperCase() ?? "query"}`, {
        kind: api.SpanKind.CLIENT,
        attributes: { "db.system.name": "postgresql", "db.query.text": text.slice(0, 1_000) },
      });
      const last = args.length - 1;
      const callback = args[last];
      if (typeof callback === "function") {
        args[last] = (err: unknown, res: unknown) => {
          finish(api, span, err);
          callback(err, res);
        };
        return query(...args);
      }
      return (query(...args) as Promise<unknown>).then(
        (res) => {
          finish(api, span);
          return res;
        },
        (err: unknown) => {
          finish(api, span, err);
          throw err;
        },
      );
    };
  });
}
