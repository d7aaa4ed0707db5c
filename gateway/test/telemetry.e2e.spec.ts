// Traces (OpenTelemetry): with OTEL_EXPORTER_OTLP_ENDPOINT set, one request yields spans from the
// gateway (HTTP, gRPC client) and the service (gRPC server, Postgres, NATS publish by the
// outbox relay), all in one trace: the one the client's traceparent named. The OTLP receiver is
// a plain HTTP server here, decoding what it is sent (OTLP http/protobuf) with protobufjs.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import protobuf from "protobufjs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, httpClient, Stack, waitFor } from "@vnm/e2e/harness";

// The part of opentelemetry/proto/collector/trace/v1 this test reads.
const OTLP = protobuf.parse(`
  syntax = "proto3";
  message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
  message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
  message Resource { repeated KeyValue attributes = 1; }
  message KeyValue { string key = 1; AnyValue value = 2; }
  message AnyValue { string string_value = 1; }
  message ScopeSpans { repeated Span spans = 2; }
  message Span { bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6; }
`).root.lookupType("ExportTraceServiceRequest");

interface SeenSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
}

const spans: SeenSpan[] = [];
let receiver: Server;
let stack: Stack;
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);

function record(body: Buffer): void {
  const req = OTLP.toObject(OTLP.decode(body), { bytes: String, defaults: true }) as {
    resourceSpans: { resource: { attributes: { key: string; value: { stringValue: string } }[] }; scopeSpans: { spans: Record<string, string>[] }[] }[];
  };
  for (const rs of req.resourceSpans) {
    const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "";
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        const hex = (b64?: string) => Buffer.from(b64 ?? "", "base64").toString("hex");
        spans.push({ service, traceId: hex(s["traceId"]), spanId: hex(s["spanId"]), parentSpanId: hex(s["parentSpanId"]), name: s["name"] ?? "" });
      }
    }
  }
}

beforeAll(async () => {
  const port = await freePort();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/traces") record(Buffer.concat(chunks));
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, "127.0.0.1", resolve));
  stack = new Stack({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_SCHEDULE_DELAY: "100" });
  await stack.startServices("identity", "bridge");
  gw = await stack.startGateway({}, false);
}, 120_000);

afterAll(async () => {
  await stack.stop();
  receiver.close();
});

it("one request is one trace, from the client's traceparent through the gateway, gRPC, Postgres and NATS", async () => {
  const traceId = randomBytes(16).toString("hex");
  const clientSpan = randomBytes(8).toString("hex");
  const r = await http("POST", "/bridges", { name: "traced" }, { traceparent: `00-${traceId}-${clientSpan}-01` });
  expect(r.status).toBe(201);
  const subject = `${stack.prefix}.bridge.Bridge.created`;
  const mine = () => spans.filter((s) => s.traceId === traceId);
  const has = (service: string, name: string | RegExp) =>
    mine().find((s) => s.service === service && (typeof name === "string" ? s.name === name : name.test(s.name)));
  await waitFor("the request's spans", async () => Boolean(has("gateway", "POST /bridges") && has("bridge", `publish ${subject}`)), 15_000);

  const edge = has("gateway", "POST /bridges")!;
  expect(edge.parentSpanId).toBe(clientSpan); // the client's trace, continued
  const client = has("gateway", "vnm.bridge.v1.BridgeService/CreateBridge")!;
  expect(client.parentSpanId).toBe(edge.spanId);
  const server = has("bridge", "vnm.bridge.v1.BridgeService/CreateBridge")!;
  expect(server.parentSpanId).toBe(client.spanId); // carried over gRPC
  expect(mine().filter((s) => s.service === "bridge" && s.name.startsWith("pg ") && s.parentSpanId === server.spanId).length).toBeGreaterThan(0);
  expect(has("bridge", `publish ${subject}`)!.parentSpanId).toBe(server.spanId); // through the outbox
});

it("a request without traceparent starts a trace of its own, still shared by gateway and service", async () => {
  const before = new Set(spans.map((s) => s.traceId));
  const r = await http("GET", "/bridges");
  expect(r.status).toBe(200);
  const fresh = () => spans.filter((s) => !before.has(s.traceId) && s.name === "GET /bridges");
  await waitFor("a new trace", async () => fresh().length > 0, 15_000);
  const traceId = fresh()[0]!.traceId;
  await waitFor("the service's span", async () => spans.some((s) => s.traceId === traceId && s.service === "bridge"), 15_000);
});
