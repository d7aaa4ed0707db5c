// Bad input never earns a 5xx (docs/api.md, "Status codes"): a sweep of hostile bodies, path segments and
// query values over every kind's endpoints must answer 4xx (or 2xx), always with a body. Path
// variables naming a parent take a real one's id (a bridge, a chain, a load balancer and its pool,
// a QoS policy), so the bodies POSTed below it reach its children's checks (a rule's, a member's,
// a VIP's, a QoS rule's) instead of stopping at the parent's 404.
import { expect, it } from "vitest";
import { buildCatalog } from "@vnm/kit";
import { httpClient, useStack } from "../harness/harness.ts";

const fx = useStack({ VNM_RATE_LIMIT: "0" });
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);


const BODIES = [
  '{"__proto__": {"name": 5}}',
  '{"constructor": {"prototype": {"admin": true}}}',
  '{"name": "\\ud800"}',
  '{"name": "a\\u0000"}',
  '{"adminStateUp": 1e999}',
  '{"subnetLength": -0.0, "prefixLength": 1e2, "vlanId": 4096}',
  // Integers written past every range (a double's text turns to "1e+21" from 1e21 on).
  '{"subnetLength": 1e21, "prefixLength": -1e300, "vlanId": 1E+21, "managementPort": 1e21, "delay": 1e21, "limit": 1.5e300, "protocol_port": 1e21, "weight": 1e21, "creationTimestampMs": 1e30}',
  `{"inboundMirrorIds": [${Array(500).fill('"00000000-0000-4000-8000-000000000000"').join(",")}]}`,
  `${"[".repeat(5000)}${"]".repeat(5000)}`,
  '"""',
  '{"name": {"a": 1}, "roles": [{"x": 1}], "extraDhcpOpts": [1, 2]}',
  '{"tenantId": 12345678901234567890, "limit": 9223372036854775808}',
  '{"id": "00000000-0000-4000-8000-00000000000Z", "macAddr": "zz:zz:zz:zz:zz:zz"}',
  "null",
  "{}",
  '{"name":"ok"}{"name":"ok"}',
];

/** Values for path variables: a real item's where the variable names one, else plausible and hostile ones. */
const HOSTILE_SEGMENTS = ["%00", "%ED%A0%80", "..%2F..", "%E0%A4%A", "x".repeat(3000), "99999999999999999999"];

/** Every route template of the catalog, its variables filled with `value(variable)`. */
function pathsOf(value: (variable: string) => string): string[] {
  const templates = [...new Set(buildCatalog().routes.map((r) => r.template))];
  return templates.map((t) => t.replace(/\{([^}]+)\}/g, (_m, v: string) => value(v)));
}

/** One answer of the sweep: its status, and whether it named violations (a kind's checks spoke). */
interface Answer {
  status: number;
  violations: boolean;
}

/**
 * Sends requests a few at a time; lists every answer that is a 5xx or an error without the body, and
 * counts the 401s (a sweep whose token is refused would probe nothing behind the authentication).
 * `answers[i]` is the answer to `requests[i]`.
 */
async function sweep(requests: [string, string, string | undefined][]): Promise<{ bad: string[]; refused: number; answers: Answer[] }> {
  const bad: string[] = [];
  const answers: Answer[] = [];
  let refused = 0;
  for (let i = 0; i < requests.length; i += 8) {
    await Promise.all(
      requests.slice(i, i + 8).map(async ([m, p, body], j) => {
        const r = await http(m, p, body);
        answers[i + j] = { status: r.status, violations: Array.isArray(r.json?.violations) && r.json.violations.length > 0 };
        if (r.status === 401) refused++;
        if (r.status >= 500 || (r.status >= 400 && !r.json?.message)) bad.push(`${m} ${p.slice(0, 80)} ${String(body).slice(0, 40)} -> ${r.status}`);
      }),
    );
  }
  return { bad, refused, answers };
}

/** POSTs an item the sweep's paths name; its id. */
async function created(path: string, body: Record<string, unknown>): Promise<string> {
  const r = await http("POST", path, body);
  expect(r.status, `${path}: ${r.text}`).toBe(201);
  return r.json.id;
}

it("hostile bodies, path segments and query values on every route of the catalog answer 4xx (or 2xx), never 5xx", async () => {
  // The sweep's token is accepted: its bridge and subnet are made, and the list read before and after.
  const made = await http("POST", "/bridges", { name: "target" });
  expect(made.status, made.text).toBe(201);
  const b = made.json;
  const dhcp = await http("POST", `/bridges/${b.id}/dhcp`, { subnetPrefix: "10.0.0.0", subnetLength: 24 });
  expect(dhcp.status, dhcp.text).toBe(201);
  expect((await http("GET", "/bridges")).status).toBe(200);
  // Parents of the policy, lb and QoS children: their bodies reach the children's checks.
  const chainId = await created("/chains", { name: "target" });
  const loadBalancerId = await created("/load_balancers", {});
  const poolId = await created("/pools", { loadBalancerId, lbMethod: "ROUND_ROBIN" });
  const qosPolicyId = await created("/qos_policies", { name: "target" });
  // Real values reach the handlers behind the 404 checks; the rest probe the path parsing.
  const real: Record<string, string> = { id: b.id, bridgeId: b.id, subnetAddr: "10.0.0.0_24", vlanId: "0", chainId, loadBalancerId, poolId };
  const plausible = pathsOf((v) => real[v] ?? "00000000-0000-4000-8000-000000000001");
  // A QoS policy's rule collections name their policy `{id}`, as every item's path does: a pass of their own.
  plausible.push(...pathsOf((v) => (v === "id" ? qosPolicyId : "00000000-0000-4000-8000-000000000001")).filter((p) => p.startsWith(`/qos_policies/${qosPolicyId}/`)));
  const hostile = HOSTILE_SEGMENTS.flatMap((seg) => pathsOf(() => seg));
  const requests: [string, string, string | undefined][] = [];
  for (const p of plausible) {
    for (const m of ["GET", "POST", "PUT", "DELETE"]) for (const body of m === "POST" || m === "PUT" ? BODIES : [undefined]) requests.push([m, p, body]);
  }
  for (const p of hostile) for (const m of ["GET", "POST", "PUT", "DELETE"]) requests.push([m, p, m === "GET" || m === "DELETE" ? undefined : BODIES[0]]);
  for (const r of buildCatalog().routes.filter((x) => x.method === "GET")) {
    const path = r.template.replace(/\{([^}]+)\}/g, (_m, x: string) => real[x] ?? "x");
    for (const [name] of r.queryFields) {
      for (const v of ["%00", "%ED%A0%80", "-5", "1e3", "%27--", "a".repeat(6000)]) requests.push(["GET", `${path}?${name}=${v}`, undefined]);
    }
  }
  const { bad, refused, answers } = await sweep(requests);
  expect(requests.length).toBeGreaterThan(1500);
  expect(bad).toEqual([]);
  // The bodies POSTed below a real parent met the child's checks, not the parent's 404: no 404,
  // and at least one 400 naming violations at each (every answer a 4xx with the body, or a 2xx).
  const children = [`/chains/${chainId}/rules`, `/pools/${poolId}/pool_members`, `/pools/${poolId}/vips`, `/load_balancers/${loadBalancerId}/pools`, `/qos_policies/${qosPolicyId}/qos_dscp_rules`, `/qos_policies/${qosPolicyId}/qos_bw_limit_rules`];
  for (const child of children) {
    const got = answers.filter((_a, i) => requests[i]![0] === "POST" && requests[i]![1] === child);
    expect(got.length, child).toBe(BODIES.length);
    expect(got.filter((a) => a.status === 404 || a.status >= 500), child).toEqual([]);
    expect(got.some((a) => a.status === 400 && a.violations), child).toBe(true);
  }
  // Every probe went past the authentication with the admin's token, which the sweep left valid.
  expect(refused).toBe(0);
  expect((await http("GET", "/bridges")).status).toBe(200);
});
