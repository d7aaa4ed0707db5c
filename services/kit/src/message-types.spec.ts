// The contract's message types (gen/messages.ts) say what a gRPC peer here holds: the printer's
// output for the repository's protos, proto-loader's decoding of the same set agreeing with it,
// and the types a Resource's hooks get (checked by tsc: `npm run typecheck` compiles this file).
import { describe, expect, it } from "vitest";
import { loadDescriptors } from "./descriptors.ts";
import type { Messages } from "./gen/messages.ts";
import { messageTypesSource } from "./message-types.ts";
import { loadGrpc, PROTO_DIR } from "./proto.ts";
import type { Checked } from "./rules.ts";

const source = messageTypesSource(loadDescriptors(PROTO_DIR));

/** The printed declaration of one message (its lines, comments left out). */
function declared(name: string): string[] {
  const lines = source.split("\n");
  const start = lines.indexOf(`  type ${name} = {`);
  expect(start, `type ${name}`).toBeGreaterThanOrEqual(0);
  const end = lines.indexOf("  };", start);
  return lines.slice(start + 1, end).map((l) => l.trim()).filter((l) => !/^(\/\*\*|\*)/.test(l));
}

describe("the printed types", () => {
  it("give each field its name as written, optional, lists as arrays, int64 as a string, messages by their full names", () => {
    expect(declared("Bridge")).toEqual(expect.arrayContaining(["id?: string;", "tenantId?: string;", "adminStateUp?: boolean;", "inboundMirrorIds?: string[];"]));
    expect(declared("TraceRequest")).toEqual(expect.arrayContaining(["limit?: string;", "creationTimestampMs?: string;"]));
    expect(declared("CompatVip")).toEqual(expect.arrayContaining(["tenant_id?: string;", "connection_limit?: string;", "session_persistence?: vnm.compat.v1.SessionPersistence;"]));
    expect(declared("ListPoolsResponse")).toEqual(["items?: vnm.lb.v1.Pool[];", "next_marker?: string;"]);
    expect(source).toContain("export declare namespace google.protobuf {\n");
    expect(source).toContain("  type Empty = Record<string, never>;");
  });

  it("name the fields each message's rules require, and the messages a message holds", () => {
    expect(source).toContain('  "vnm.lb.v1.Pool": "loadBalancerId" | "lbMethod";');
    expect(source).toContain('  "vnm.lb.v1.LoadBalancer": never;');
    expect(source).toContain('  "vnm.compat.v1.CompatHealthMonitor": { pools: "vnm.compat.v1.HealthMonitorPool" };');
  });
});

describe("proto-loader, with the parts' options, decodes what the types say", () => {
  const method = loadGrpc().service("vnm.tracing.v1.TraceRequestService").service["GetTraceRequest"]!;
  const roundTrip = (m: Messages["vnm.tracing.v1.TraceRequest"]): unknown => method.responseDeserialize(method.responseSerialize(m));

  it("int64 as the decimal string, unset and empty fields absent", () => {
    const decoded = roundTrip({ id: "3f2a3c3e-8a57-4d0e-9a43-6c1f7b0e2d11", name: "t", limit: "9223372036854775807", enabled: false });
    expect(decoded).toEqual({ id: "3f2a3c3e-8a57-4d0e-9a43-6c1f7b0e2d11", name: "t", limit: "9223372036854775807", enabled: false });
  });

  it("names a compat kind's fields in snake_case, as its type does; an empty list is absent", () => {
    const get = (rpc: string) => loadGrpc().service(`vnm.compat.v1.${rpc.replace(/^Get/, "")}Service`).service[rpc]!;
    const vips = get("GetCompatVip");
    const vip: Messages["vnm.compat.v1.CompatVip"] = { tenant_id: "acme", connection_limit: "-1" };
    expect(vips.responseDeserialize(vips.responseSerialize(vip))).toEqual({ tenant_id: "acme", connection_limit: "-1" });
    const pools = get("GetCompatPool");
    const pool: Messages["vnm.compat.v1.CompatPool"] = { tenant_id: "acme", members: [] };
    expect(pools.responseDeserialize(pools.responseSerialize(pool))).toEqual({ tenant_id: "acme" });
  });
});

describe("a body that passed its rules (Checked)", () => {
  it("has the fields its rules require, in nested messages too; the others may be absent", () => {
    const pool: Checked<"vnm.lb.v1.Pool"> = { loadBalancerId: "lb", lbMethod: "ROUND_ROBIN" };
    const monitor: Checked<"vnm.compat.v1.CompatHealthMonitor"> = { tenant_id: "acme", pools: [{ pool_id: "p" }] };
    expect([pool.loadBalancerId.length, monitor.pools?.[0]?.pool_id.length]).toEqual([2, 1]);
    // @ts-expect-error: healthMonitorId is optional, absent unless sent
    expect(() => pool.healthMonitorId.length).toThrow(TypeError);
    // @ts-expect-error: a Pool has no such field
    expect(pool.loadBalancer_id).toBeUndefined();
    // @ts-expect-error: a required field left out
    const missing: Checked<"vnm.lb.v1.Pool"> = { lbMethod: "ROUND_ROBIN" };
    // @ts-expect-error: a nested message's required field left out
    const unnamed: Checked<"vnm.compat.v1.CompatHealthMonitor"> = { tenant_id: "acme", pools: [{ status: "ACTIVE" }] };
    expect([missing, unnamed]).toHaveLength(2);
  });
});
