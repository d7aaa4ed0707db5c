// The audit trail (docs/decisions.md, "Audit trail"): every write asked of the API, and every login, is one "audit" log
// line of the gateway and one record on NATS, on `<prefix>-audit.<domain>.<Kind>` (a stream of its
// own, which no change feed sees), naming who, in which tenant, what, the request id and the
// outcome; refusals included. A message carries the records of its subject made within 100 ms
// (a JSON array), and those still waiting go out when the gateway stops.
import { connect, StringCodec } from "nats";
import { afterAll, beforeAll, expect, it } from "vitest";
import { httpClient, Stack, waitFor } from "@vnm/e2e/harness";

const stack = new Stack({ LOG_LEVEL: "info" });
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const records: { subject: string; data: Record<string, unknown> }[] = [];
/** How many records each audit message carried. */
const messageSizes: number[] = [];
const changes: string[] = [];

beforeAll(async () => {
  const nc = await connect({ servers: stack.natsUrl });
  const sc = StringCodec();
  nc.subscribe(`${stack.prefix}-audit.>`, {
    callback: (_e, m) => {
      const batch = JSON.parse(sc.decode(m.data)) as Record<string, unknown>[];
      messageSizes.push(batch.length);
      for (const data of batch) records.push({ subject: m.subject, data });
    },
  });
  nc.subscribe(`${stack.prefix}.>`, { callback: (_e, m) => changes.push(m.subject) });
  afterAll(() => nc.close());
  await stack.startServices("identity", "bridge");
  gw = await stack.startGateway({}, false);
});

afterAll(async () => {
  await stack.stop();
});

/** The gateway's "audit" log lines. */
const logged = () => stack.logLines().filter((l) => l["msg"] === "audit");

async function recordOf(requestId: string): Promise<Record<string, unknown>> {
  await waitFor(`the audit record of ${requestId}`, async () => records.some((r) => r.data["requestId"] === requestId) && logged().some((l) => l["requestId"] === requestId), 5_000);
  const published = records.find((r) => r.data["requestId"] === requestId)!;
  const line = logged().find((l) => l["requestId"] === requestId)!;
  // The log line and the NATS message say the same.
  for (const [k, v] of Object.entries(published.data)) expect(line[k], k).toEqual(v);
  return { ...published.data, subject: published.subject };
}

it("records a creation, an update, a merge patch and a deletion with who, what, the request id and the outcome", async () => {
  const created = await http("POST", "/bridges", { name: "audited", tenantId: "acme" }, { "x-request-id": `create-${stack.id}` });
  expect(created.status).toBe(201);
  const id = (created.json as { id: string }).id;
  expect(await recordOf(`create-${stack.id}`)).toMatchObject({
    subject: `${stack.prefix}-audit.bridge.Bridge`,
    user: "admin",
    role: "admin",
    method: "POST",
    kind: "bridge.Bridge",
    path: `/bridges/${id}`,
    id,
    status: 201,
    outcome: "succeeded",
  });
  await http("PUT", `/bridges/${id}`, { name: "renamed", tenantId: "acme" }, { "x-request-id": `update-${stack.id}` });
  expect(await recordOf(`update-${stack.id}`)).toMatchObject({ method: "PUT", kind: "bridge.Bridge", id, status: 200, outcome: "succeeded" });
  const patched = await http("PATCH", `/bridges/${id}`, { adminStateUp: false }, { "x-request-id": `patch-${stack.id}`, "content-type": "application/merge-patch+json" });
  expect(patched.status).toBe(200);
  expect(await recordOf(`patch-${stack.id}`)).toMatchObject({ method: "PATCH", kind: "bridge.Bridge", id, status: 200, outcome: "succeeded" });
  await http("DELETE", `/bridges/${id}`, undefined, { "x-request-id": `delete-${stack.id}` });
  expect(await recordOf(`delete-${stack.id}`)).toMatchObject({ method: "DELETE", kind: "bridge.Bridge", id, status: 204, outcome: "succeeded" });
});

it("records refused writes and logins, and never a password", async () => {
  const bad = await http("POST", "/bridges", { name: 7 }, { "x-request-id": `bad-${stack.id}` });
  expect(bad.status).toBe(400);
  expect(await recordOf(`bad-${stack.id}`)).toMatchObject({ method: "POST", kind: "bridge.Bridge", path: "/bridges", status: 400, outcome: "refused" });
  const missing = "00000000-0000-4000-8000-000000000000";
  await http("DELETE", `/bridges/${missing}`, undefined, { "x-request-id": `gone-${stack.id}` });
  expect(await recordOf(`gone-${stack.id}`)).toMatchObject({ id: missing, status: 404, outcome: "refused" });

  const secret = "not-the-password-at-all";
  const login = await fetch(`${gw}/login`, {
    method: "POST",
    headers: { authorization: `Basic ${Buffer.from(`admin:${secret}`).toString("base64")}`, "x-request-id": `login-${stack.id}` },
  });
  expect(login.status).toBe(401);
  expect(await recordOf(`login-${stack.id}`)).toMatchObject({ subject: `${stack.prefix}-audit.identity.login`, user: "admin", kind: "identity.login", status: 401, outcome: "refused" });
  expect(JSON.stringify(logged())).not.toContain(secret);
  expect(JSON.stringify(records)).not.toContain(secret);
});

it("reads are not audited, and audit records stay out of the change subjects", async () => {
  await http("GET", "/bridges", undefined, { "x-request-id": `read-${stack.id}` });
  await new Promise((r) => setTimeout(r, 300));
  expect(records.some((r) => r.data["requestId"] === `read-${stack.id}`)).toBe(false);
  expect(changes.length).toBeGreaterThan(0);
  expect(changes.every((s) => !s.includes("audit"))).toBe(true);
});

it("sends the records of writes made together in one message, each record whole", async () => {
  const ids = Array.from({ length: 5 }, (_, i) => `burst-${i}-${stack.id}`);
  const sizesBefore = messageSizes.length;
  await Promise.all(ids.map((id, i) => http("POST", "/bridges", { name: `burst-${i}`, tenantId: "acme" }, { "x-request-id": id })));
  for (const id of ids) expect(await recordOf(id)).toMatchObject({ method: "POST", kind: "bridge.Bridge", status: 201, outcome: "succeeded" });
  // Five writes answered within 100 ms of each other: fewer messages than records.
  const sizes = messageSizes.slice(sizesBefore);
  expect(sizes.reduce((a, b) => a + b, 0)).toBe(5);
  expect(sizes.length).toBeLessThan(5);
});

it("publishes the records still waiting when the gateway stops", async () => {
  const other = await stack.startGateway({}, false);
  const proc = stack.procs[stack.procs.length - 1]!;
  const token = await stack.login(other, "admin", stack.adminPassword);
  const id = `last-${stack.id}`;
  const res = await fetch(`${other}/bridges`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": id },
    body: JSON.stringify({ name: "last-words", tenantId: "acme" }),
  });
  expect(res.status).toBe(201);
  await proc.stop("SIGTERM");
  expect(proc.child.exitCode).toBe(0);
  await waitFor(`the audit record of ${id}`, async () => records.some((r) => r.data["requestId"] === id), 5_000);
});
