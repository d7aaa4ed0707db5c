// The compat service reached directly over gRPC (no gateway): it checks its input and keeps
// each tenant to its own resources without the gateway's help.
import * as grpc from "@grpc/grpc-js";
import { etagOf, IF_MATCH_KEY, IF_NONE_MATCH_KEY } from "@vnm/kit";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;

beforeAll(async () => {
  svc = await directService("compat");
});

afterAll(async () => {
  await svc.stop();
});

it("refuses a protocol that is not a name or number (the JSON text the gateway passes on), naming it", async () => {
  const r = await svc.call("vnm.compat.v1.CompatSecurityGroupRuleService", "CreateCompatSecurityGroupRule", {
    security_group_rule: { tenant_id: "t", direction: "ingress", security_group_id: "00000000-0000-4000-8000-000000000001", protocol: '"06"' },
  });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r)).toEqual([{ property: "protocol", message: expect.stringMatching(/integer from 0 to 255/) }]);
});

it("hides another tenant's pool as missing", async () => {
  const a = svc.token({ role: "tenant_admin", tenantId: "A" });
  const b = svc.token({ role: "tenant_admin", tenantId: "B" });
  const p = await svc.call("vnm.compat.v1.CompatPoolService", "CreateCompatPool", { pool: { tenant_id: "A" } }, a);
  expect(p.err).toBeNull();
  expect((await svc.call("vnm.compat.v1.CompatPoolService", "GetCompatPool", { id: p.res.id }, b)).err?.code).toBe(grpc.status.NOT_FOUND);
  const m = await svc.call("vnm.compat.v1.CompatMemberService", "CreateCompatMember", { member: { tenant_id: "B", pool_id: p.res.id } }, b);
  expect(m.err?.code).toBe(grpc.status.NOT_FOUND);
});

// Each field's rules as compat.proto states them (buf.validate), checked in the kit, and the
// rules of one field against another beside their kind (lb.ts, sg-rules.ts): a 400 naming the
// field, in the words a client reads.
const SVC = "vnm.compat.v1.Compat";
const ID = "00000000-0000-4000-8000-0000000000AB";
const bad: [kind: string, over: Record<string, unknown>, property: string, message: string][] = [
  ["Pool", { tenant_id: undefined }, "tenant_id", "value is required"],
  ["Pool", { tenant_id: "" }, "tenant_id", "must be at least 1 characters"],
  ["Pool", { tenant_id: "t".repeat(256) }, "tenant_id", "must be at most 255 characters"],
  ["Pool", { name: "a\u0000b" }, "name", "must be valid Unicode text without NUL characters"],
  ["Pool", { description: "d".repeat(1025) }, "description", "must be at most 1024 characters"],
  ["Pool", { provider: "p".repeat(256) }, "provider", "must be at most 255 characters"],
  ["Pool", { lb_method: "LEAST_CONNECTIONS" }, "lb_method", "must be in list [ROUND_ROBIN]"],
  ["Pool", { protocol: "HTTP" }, "protocol", "must be in list [TCP]"],
  ["Pool", { status: "UP" }, "status", "must be in list [ACTIVE, INACTIVE]"],
  ["Pool", { router_id: "router" }, "router_id", "must be a valid UUID"],
  ["Pool", { status_description: "s".repeat(1025) }, "status_description", "must be at most 1024 characters"],
  ["Member", { address: "10.0.0" }, "address", "must be a valid IPv4 address"],
  ["Member", { weight: 257 }, "weight", "must be greater than or equal to 0 and less than or equal to 256"],
  ["Member", { protocol_port: 65536 }, "protocol_port", "must be greater than or equal to 0 and less than or equal to 65535"],
  ["Member", { status: "DOWN" }, "status", "must be in list [ACTIVE, INACTIVE]"],
  ["Vip", { protocol: "HTTPS" }, "protocol", "HTTPS is not supported: only TCP is"],
  ["Vip", { protocol: "UDP" }, "protocol", "must be in list [TCP]"],
  ["Vip", { address: "::1" }, "address", "must be a valid IPv4 address"],
  ["Vip", { connection_limit: "-2" }, "connection_limit", "must be greater than or equal to -1 and less than or equal to 2147483647"],
  ["Vip", { session_persistence: { type: "STICKY" } }, "session_persistence", "must be in list [APP_COOKIE, HTTP_COOKIE, SOURCE_IP]"],
  ["Vip", { session_persistence: { cookie_name: "jar" } }, "session_persistence", "value is required"],
  ["Vip", { session_persistence: { type: "APP_COOKIE" } }, "session_persistence", "cookie_name is required with APP_COOKIE"],
  ["Vip", { session_persistence: { type: "SOURCE_IP", cookie_name: "jar" } }, "session_persistence", "cookie_name is only for APP_COOKIE, not SOURCE_IP"],
  ["HealthMonitor", { type: "UDP" }, "type", "must be in list [PING, TCP, HTTP, HTTPS]"],
  ["HealthMonitor", { max_retries: -1 }, "max_retries", "must be greater than or equal to 0 and less than or equal to 2147483647"],
  ["HealthMonitor", { delay: 1, timeout: 5 }, "delay", "must be at least timeout"],
  ["HealthMonitor", { pools: [{ pool_id: "pool" }] }, "pools", "must be a valid UUID"],
  ["HealthMonitor", { pools: [{ status: "ACTIVE" }] }, "pools", "value is required"],
  ["HealthMonitor", { pools: [{ pool_id: ID, status: "UP" }] }, "pools", "must be in list [ACTIVE, INACTIVE]"],
  ["HealthMonitor", { pools: Array.from({ length: 257 }, () => ({ pool_id: ID })) }, "pools", "must contain no more than 256 item(s)"],
  ["SecurityGroupRule", { direction: undefined }, "direction", "value is required"],
  ["SecurityGroupRule", { direction: "both" }, "direction", "must be in list [ingress, egress]"],
  ["SecurityGroupRule", { security_group_id: "sg" }, "security_group_id", "must be a valid UUID"],
  ["SecurityGroupRule", { ethertype: "ipx" }, "ethertype", "must be ipv4, ipv6 or arp"],
  ["SecurityGroupRule", { name: "n".repeat(256) }, "name", "must be at most 255 characters"],
  ["SecurityGroupRule", { remote_group_id: "group" }, "remote_group_id", "must be a valid UUID"],
  ["SecurityGroupRule", { protocol: '"tcp"', port_range_min: 0, port_range_max: 22 }, "port_range_min", "must be between 1 and 65535"],
  ["SecurityGroupRule", { remote_ip_prefix: "10.0.0.0/8", remote_group_id: ID }, "remote_group_id", "must not be given with remote_ip_prefix: a rule has at most one remote"],
];
const snake = (kind: string) => kind.replace(/^./, (c) => c.toLowerCase()).replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const valid: Record<string, Record<string, unknown>> = {
  SecurityGroupRule: { direction: "ingress", security_group_id: "00000000-0000-4000-8000-0000000005a9" },
};

const cases = bad.map(([kind, over, property, message]) => [kind, JSON.stringify(over).slice(0, 60), property, message, over] as const);

it.each(cases)("a %s body %s is a 400 naming %s: %s", async (kind, _what, property, message, over) => {
  const body = { tenant_id: "t", ...valid[kind], ...over };
  const r = await svc.call(`${SVC}${kind}Service`, `CreateCompat${kind}`, { [snake(kind)]: body });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r)).toEqual([{ property, message }]);
});

it("keeps UUIDs in lower case and an ethertype in any case as its lower-case name", async () => {
  const p = await svc.call(`${SVC}PoolService`, "CreateCompatPool", { pool: { tenant_id: "t", id: ID, router_id: ID } });
  expect(p.err).toBeNull();
  expect(p.res).toMatchObject({ id: ID.toLowerCase(), router_id: ID.toLowerCase() });
  const g = await svc.call(`${SVC}SecurityGroupRuleService`, "CreateCompatSecurityGroupRule", {
    security_group_rule: { tenant_id: "t", direction: "egress", security_group_id: ID, ethertype: "IPv6", protocol: "1" },
  });
  expect(g.err).toBeNull();
  expect(g.res).toMatchObject({ security_group_id: ID.toLowerCase(), ethertype: "ipv6", protocol: '"icmpv6"' });
});

it("refuses an association that names no monitor, or names one by something not a UUID", async () => {
  const p = await svc.call(`${SVC}PoolService`, "CreateCompatPool", { pool: { tenant_id: "t" } });
  for (const [association, message] of [
    [{}, "value is required"],
    [{ id: "monitor" }, "must be a valid UUID"],
  ] as const) {
    const r = await svc.call(`${SVC}PoolService`, "AssociateHealthMonitor", { poolId: p.res.id, association });
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r)).toEqual([{ property: "id", message }]);
  }
});

// The association's If-Match is the service's own check, in the delete's transaction: what the
// gateway checked before may have changed by the time the delete runs.
it("dissociates only when If-Match names the association as it is and If-None-Match does not (FAILED_PRECONDITION with its tag otherwise)", async () => {
  const pool = await svc.call(`${SVC}PoolService`, "CreateCompatPool", { pool: { tenant_id: "t" } });
  const hm = await svc.call(`${SVC}HealthMonitorService`, "CreateCompatHealthMonitor", { health_monitor: { tenant_id: "t", type: "TCP", pools: [{ pool_id: pool.res.id, status: "ACTIVE" }] } });
  expect(hm.err).toBeNull();
  const ref = { poolId: pool.res.id, healthMonitorId: hm.res.id };
  const got = await svc.call(`${SVC}PoolService`, "GetPoolHealthMonitor", ref);
  expect(got.res).toMatchObject({ id: hm.res.id, pool_id: pool.res.id, status: "ACTIVE" });
  const tag = etagOf(got.res);
  const stale = await svc.call(`${SVC}PoolService`, "DissociateHealthMonitor", ref, undefined, { [IF_MATCH_KEY]: '"not-its-tag"' });
  expect(stale.err?.code).toBe(grpc.status.FAILED_PRECONDITION);
  expect(stale.err?.details).toContain(tag);
  expect((await svc.call(`${SVC}PoolService`, "GetPoolHealthMonitor", ref)).err).toBeNull();
  // If-None-Match, as on every DELETE: "*" or the association's tag (weakly) refuses while it is there.
  for (const header of ["*", `W/${tag}`, `"other", ${tag}`]) {
    const kept = await svc.call(`${SVC}PoolService`, "DissociateHealthMonitor", ref, undefined, { [IF_NONE_MATCH_KEY]: header });
    expect(kept.err?.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(kept.err?.details).toContain(tag);
  }
  expect((await svc.call(`${SVC}PoolService`, "GetPoolHealthMonitor", ref)).err).toBeNull();
  expect((await svc.call(`${SVC}PoolService`, "DissociateHealthMonitor", ref, undefined, { [IF_MATCH_KEY]: tag, [IF_NONE_MATCH_KEY]: '"not-its-tag"' })).err).toBeNull();
  expect((await svc.call(`${SVC}PoolService`, "GetPoolHealthMonitor", ref)).err?.code).toBe(grpc.status.NOT_FOUND);
});
