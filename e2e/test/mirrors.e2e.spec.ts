// End to end for mirrors, the policy spec's §4: administrators only; toPortId required and the
// port asked of the routing service (unknown: 404 naming it); conditions checked as a rule's; PUT
// replacing toPortId and conditions; deleting the port deletes its mirrors (the routing service's
// announcement, followed by the policy service's durable consumer), announced; with the routing
// service down a mirror cannot be written (503). Real policy and routing services, gateway,
// Postgres, NATS and Redis.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, useStack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
type Item = Record<string, unknown> & { id: string; uri: string };
const PASSWORD = "mirrors-pass-1234";
const tokens: Record<string, string> = {};
const props = (r: HttpResult) => ((r.json.violations as { property: string }[] | undefined) ?? []).map((v) => v.property);

let router: string;
const newPort = async (): Promise<string> => {
  const r = await http("POST", `/routers/${router}/ports`, {});
  expect(r.status, r.text).toBe(201);
  return r.json.id as string;
};

beforeAll(async () => {
  const name = `taA-m-${fx.stack.id}`;
  expect((await http("POST", "/users", { name, password: PASSWORD, tenantId: "A", roles: ["tenant_admin"] })).status).toBe(201);
  tokens["taA"] = await fx.stack.login(fx.gw, name, PASSWORD);
  const r = await http("POST", "/routers", { name: "r", tenantId: "A" });
  expect(r.status, r.text).toBe(201);
  router = r.json.id;
});

describe("mirrors (policy spec §4)", () => {
  it("names mirrors and its template in the root document", async () => {
    const r = await http("GET", "/");
    expect(r.json.mirrors).toBe(`${fx.gw}/mirrors`);
    expect(r.json.mirrorTemplate).toBe(`${fx.gw}/mirrors/{id}`);
  });

  it("creates, reads, lists, replaces and deletes under its media types; conditions default empty", async () => {
    const port = await newPort();
    const r = await http("POST", "/mirrors", { toPortId: port }, { "content-type": V("Mirror-v1") });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get("content-type")).toBe(V("Mirror-v1"));
    expect(r.headers.get("location")).toBe(`${fx.gw}/mirrors/${r.json.id}`);
    expect(r.json).toMatchObject({ toPortId: port, uri: `${fx.gw}/mirrors/${r.json.id}` });
    expect(r.json.conditions ?? []).toEqual([]);
    const list = await http("GET", "/mirrors", undefined, { accept: V("collection.Mirror-v1") });
    expect(list.headers.get("content-type")).toBe(V("collection.Mirror-v1"));
    expect((list.json as Item[]).map((m) => m.id)).toContain(r.json.id);
    const other = await newPort();
    const conditions = [{ nwSrcAddress: "10.0.0.0", nwSrcLength: 8, dlSrc: "AA:BB:CC:DD:EE:FF", tpDst: { start: 80, end: 80 } }, { invNwProto: true, nwProto: 17 }];
    const put = await http("PUT", r.json.uri, { toPortId: other, conditions });
    expect(put.status, put.text).toBe(200);
    expect(put.json.toPortId).toBe(other);
    expect(put.json.conditions).toHaveLength(2);
    expect(put.json.conditions[0]).toMatchObject({ nwSrcAddress: "10.0.0.0", nwSrcLength: 8, dlSrc: "aa:bb:cc:dd:ee:ff", tpDst: { start: 80, end: 80 }, fragmentPolicy: "header", condInvert: false });
    expect(put.json.conditions[1]).toMatchObject({ invNwProto: true, nwProto: 17, fragmentPolicy: "any", nwDstLength: 0 });
    expect((await http("GET", r.json.uri)).json).toEqual(put.json);
    expect((await http("DELETE", r.json.uri)).status).toBe(204);
    expectError(await http("GET", r.json.uri), 404);
    expectError(await http("PUT", r.json.uri, { toPortId: other }), 404);
    expectError(await http("DELETE", r.json.uri), 404);
  });

  it("toPortId missing is 400 on it; an unknown port is 404 naming it; nothing is stored", async () => {
    const before = ((await http("GET", "/mirrors")).json as Item[]).length;
    const none = await http("POST", "/mirrors", { conditions: [] });
    expectError(none, 400);
    expect(props(none)).toEqual(["toPortId"]);
    expectError(await http("POST", "/mirrors", { toPortId: "nope" }), 400);
    const ghost = randomUUID();
    const unknown = await http("POST", "/mirrors", { toPortId: ghost });
    expectError(unknown, 404);
    expect(unknown.json.message).toContain(ghost);
    expect(((await http("GET", "/mirrors")).json as Item[]).length).toBe(before);
    const port = await newPort();
    const m = (await http("POST", "/mirrors", { toPortId: port })).json as Item;
    expectError(await http("PUT", m.uri, { toPortId: ghost }), 404);
    expectError(await http("PUT", m.uri, {}), 400);
    expect((await http("GET", m.uri)).json.toPortId).toBe(port);
  });

  it("checks conditions as a rule's: 400 naming the condition's field", async () => {
    const port = await newPort();
    const cases: [Record<string, unknown>, string][] = [
      [{ nwSrcAddress: "10.0.0" }, "conditions"],
      [{ dlType: 1 }, "conditions"],
      [{ fragmentPolicy: "sometimes" }, "conditions"],
      [{ tpSrc: { start: 9, end: 1 } }, "conditions[1].tpSrc"],
      [{ tpSrc: { start: 1, end: 9 }, fragmentPolicy: "any" }, "conditions[1].fragmentPolicy"],
    ];
    for (const [cond, property] of cases) {
      const r = await http("POST", "/mirrors", { toPortId: port, conditions: [{}, cond] });
      expectError(r, 400);
      expect(props(r).some((p) => p.startsWith(property)), `${JSON.stringify(cond)}: ${props(r)}`).toBe(true);
    }
  });

  it("is for administrators only: a tenant admin gets 403", async () => {
    const port = await newPort();
    const as = { "x-auth-token": tokens["taA"]! };
    expectError(await http("GET", "/mirrors", undefined, as), 403);
    expectError(await http("POST", "/mirrors", { toPortId: port }, as), 403);
    const m = (await http("POST", "/mirrors", { toPortId: port })).json as Item;
    expectError(await http("GET", m.uri, undefined, as), 403);
    expectError(await http("DELETE", m.uri, undefined, as), 403);
  });

  it("deleting the port a mirror sends to deletes the mirror within 5 s, announced; another port's stays", async () => {
    const port = await newPort();
    const kept = await newPort();
    const a = (await http("POST", "/mirrors", { toPortId: port })).json as Item;
    const b = (await http("POST", "/mirrors", { toPortId: port, conditions: [{ nwProto: 6 }] })).json as Item;
    const c = (await http("POST", "/mirrors", { toPortId: kept })).json as Item;
    expect((await http("DELETE", `/ports/${port}`)).status).toBe(204);
    await waitFor("the port's mirrors gone", async () => (await http("GET", a.uri)).status === 404 && (await http("GET", b.uri)).status === 404, 5000);
    expect((await http("GET", c.uri)).status).toBe(200);
    await waitFor("their deletion announced", async () => [a, b].every((m) => fx.events.some((e) => e.subject === `${fx.stack.prefix}.policy.Mirror.deleted` && e.data["id"] === m.id)), 5000);
    // The port is known as gone: a mirror naming it is a 404.
    expectError(await http("POST", "/mirrors", { toPortId: port }), 404);
  });

  it("with the routing service down, a mirror cannot be written (503 naming it); reads still work", async () => {
    const port = await newPort();
    const m = (await http("POST", "/mirrors", { toPortId: port })).json as Item;
    await fx.stack.stopService("routing");
    try {
      const r = await http("POST", "/mirrors", { toPortId: port });
      expectError(r, 503);
      expect(r.json.message).toContain("routing");
      expect((await http("GET", m.uri)).status).toBe(200);
    } finally {
      await fx.stack.startServices("routing");
    }
    await waitFor("the routing service back", async () => (await http("POST", "/mirrors", { toPortId: port })).status === 201, 20_000);
  });
});
