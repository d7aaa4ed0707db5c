// Bad input never earns a 5xx (conventions 3): a sweep of hostile bodies, path segments and
// query values over every kind's endpoints must answer 4xx (or 2xx), always with a body.
import { afterAll, beforeAll, expect, it } from "vitest";
import { httpClient, Stack } from "./harness.ts";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json");

beforeAll(async () => {
  await stack.startServices();
  gw = await stack.startGateway({ VNM_RATE_LIMIT: "0" });
});

afterAll(async () => {
  await stack.stop();
});

const BODIES = [
  '{"__proto__": {"name": 5}}',
  '{"constructor": {"prototype": {"admin": true}}}',
  '{"name": "\\ud800"}',
  '{"name": "a\\u0000"}',
  '{"adminStateUp": 1e999}',
  '{"subnetLength": -0.0, "prefixLength": 1e2, "vlanId": 4096}',
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

it("hostile bodies, path segments and query values answer 4xx (or 2xx), never 5xx", async () => {
  const b = (await http("POST", "/bridges", { name: "target" })).json;
  await http("POST", `/bridges/${b.id}/dhcp`, { subnetPrefix: "10.0.0.0", subnetLength: 24 });
  const paths = [
    "/bridges",
    `/bridges/${b.id}`,
    `/bridges/${b.id}/dhcp`,
    `/bridges/${b.id}/dhcp/10.0.0.0_24`,
    `/bridges/${b.id}/dhcp/10.0.0.0_24/hosts`,
    `/bridges/${b.id}/dhcpV6`,
    `/bridges/${b.id}/mac_table`,
    `/bridges/${b.id}/vlans/99999999999999999999/mac_table`,
    `/bridges/${b.id}/dhcp/%00`,
    `/bridges/${b.id}/dhcp/10.0.0.0_24/hosts/%00`,
    `/bridges/${b.id}/mac_table/%00_x`,
    `/bridges/${b.id}/dhcpV6/%3A%3A_64`,
    `/bridges/${b.id}/dhcpV6/%ud800_1`,
    "/users",
    "/users/%00",
    "/load_balancers",
    "/pools",
    "/health_monitors",
    "/%E0%A4%A",
  ];
  const fivexx: string[] = [];
  let count = 0;
  for (const p of paths) {
    for (const m of ["GET", "POST", "PUT", "DELETE"]) {
      for (const body of m === "POST" || m === "PUT" ? BODIES : [undefined]) {
        const r = await http(m, p, body);
        count++;
        if (r.status >= 500 || (r.status >= 400 && !r.json?.message)) fivexx.push(`${m} ${p} ${String(body).slice(0, 40)} -> ${r.status}`);
      }
    }
  }
  for (const q of ["tenant_id=%00", "tenant_id=%ED%A0%80", "limit=-5", "limit=1e3", "marker=%27--", `tenant_id=${"a".repeat(6000)}`]) {
    const r = await http("GET", `/bridges?${q}`);
    count++;
    if (r.status >= 500) fivexx.push(`GET /bridges?${q.slice(0, 30)} -> ${r.status}`);
  }
  expect(count).toBeGreaterThan(500);
  expect(fivexx).toEqual([]);
});
