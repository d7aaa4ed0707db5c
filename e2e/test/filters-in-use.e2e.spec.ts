// Filters and mirrors in use (policy.md §3, §4's "Relations", §8; issue 52) end to end: a
// bridge's, router's and port's filters name the policy service's chains, and their mirror lists
// its mirrors, checked across services (the bridge and routing services ask the policy service),
// with tenancy; a chain or mirror deleted is cleared wherever it is used, within the bound
// docs/api.md states; and the policy service down is a 503 only for a write that names a new
// chain.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { expectError, httpClient, useStack, waitFor } from "../harness/harness.ts";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
const MERGE = { "content-type": "application/merge-patch+json" };

/** How long a deleted chain or mirror may stay in a filter or mirror list after its DELETE's 204 (docs/api.md). */
const CLEAR_MS = 5_000;

type Headers = Record<string, string>;
type Item = Record<string, unknown> & { id: string; uri: string };

const users = new Map<string, Headers>();
/** A tenant administrator of `tenant`, logged in. */
const as = async (tenant: string): Promise<Headers> => {
  if (!users.has(tenant)) {
    const name = `u-${fx.stack.id}-${tenant}`;
    const made = await http("POST", "/users", { name, password: "tenant-password-1", tenantId: tenant, roles: ["tenant_admin"] });
    expect(made.status, made.text).toBe(201);
    users.set(tenant, { "x-auth-token": await fx.stack.login(fx.gw, name, "tenant-password-1") });
  }
  return users.get(tenant)!;
};

/** A chain, made by the administrator for `tenantId` (none: no tenant). */
const chain = async (tenantId?: string): Promise<string> => {
  const r = await http("POST", "/chains", { name: "c", ...(tenantId ? { tenantId } : {}) });
  expect(r.status, r.text).toBe(201);
  return r.json.id;
};

const router = async (headers: Headers = {}, over: Record<string, unknown> = {}): Promise<Item> => {
  const r = await http("POST", "/routers", { name: "r", ...over }, headers);
  expect(r.status, r.text).toBe(201);
  return r.json;
};

/** A mirror (administrators only) to a new router port; its id, and the port's (`mirrorTo`). */
const mirrorTo = async (): Promise<{ id: string; port: string }> => {
  const to = await http("POST", `/routers/${(await router()).id}/ports`, {});
  expect(to.status, to.text).toBe(201);
  const r = await http("POST", "/mirrors", { toPortId: to.json.id });
  expect(r.status, r.text).toBe(201);
  return { id: r.json.id, port: to.json.id };
};
const mirror = async (): Promise<string> => (await mirrorTo()).id;

interface Kind {
  name: string;
  /** Where its items are read (`/<items>/{id}`), and the kind its changes name. */
  items: string;
  changes: string;
  /** Where a new item is POSTed (a port: under a new router of the same caller). */
  collection: (headers: Headers) => Promise<string>;
  mirrors: boolean;
}

const kinds: Kind[] = [
  { name: "bridge", items: "/bridges", changes: "bridge.Bridge", collection: async () => "/bridges", mirrors: true },
  { name: "router", items: "/routers", changes: "routing.Router", collection: async () => "/routers", mirrors: true },
  { name: "port", items: "/ports", changes: "routing.Port", collection: async (h) => `/routers/${(await router(h)).id}/ports`, mirrors: true },
];

describe.each(kinds)("a $name's filters", (kind) => {
  const create = async (body: Record<string, unknown>, headers: Headers = {}) => http("POST", await kind.collection(headers), body, headers);
  const made = async (body: Record<string, unknown> = {}, headers: Headers = {}): Promise<Item> => {
    const r = await create(body, headers);
    expect(r.status, r.text).toBe(201);
    return r.json;
  };

  it("a missing chain is 404 naming it, in POST, PUT and PATCH, and nothing is stored", async () => {
    const missing = randomUUID();
    const id = randomUUID();
    const r = await create({ id, inboundFilterId: missing });
    expectError(r, 404);
    expect(r.json.message).toContain(missing);
    expectError(await http("GET", `${kind.items}/${id}`), 404);

    const item = await made({ name: "kept" });
    const put = await http("PUT", item.uri, { outboundFilterId: missing });
    expectError(put, 404);
    expect(put.json.message).toContain(missing);
    const patch = await http("PATCH", item.uri, { inboundFilterId: missing }, MERGE);
    expectError(patch, 404);
    expect(patch.json.message).toContain(missing);
    const back = await http("GET", item.uri);
    expect(back.json).toMatchObject({ inboundFilterId: null, outboundFilterId: null, inboundFilter: null, outboundFilter: null });
  });

  it("another tenant's chain is 404 to a tenant's administrator, as is a chain with no tenant; the administrator may name any", async () => {
    const a = await as("A");
    const theirs = await chain("B");
    const nobody = await chain();
    for (const c of [theirs, nobody]) {
      const r = await create({ inboundFilterId: c }, a);
      expectError(r, 404);
      expect(r.json.message).toContain(c);
    }
    const item = await made({}, a);
    expectError(await http("PUT", item.uri, { outboundFilterId: theirs }, a), 404);
    expect((await http("GET", item.uri, undefined, a)).json.outboundFilterId).toBeNull();
    // The administrator sees every chain.
    expect((await http("PUT", item.uri, { outboundFilterId: theirs })).status).toBe(200);
  });

  it("an own chain is stored, and its links answer the chain", async () => {
    const a = await as("A");
    const own = (await http("POST", "/chains", { name: "own" }, a)).json.id as string;
    const item = await made({ inboundFilterId: own, outboundFilterId: own }, a);
    expect(item).toMatchObject({ inboundFilterId: own, outboundFilterId: own });
    for (const link of [item["inboundFilter"], item["outboundFilter"]]) {
      expect(link).toBe(`${fx.gw}/chains/${own}`);
      const c = await http("GET", String(link), undefined, a);
      expect(c.status, c.text).toBe(200);
      expect(c.json).toMatchObject({ id: own, name: "own", tenantId: "A" });
    }
    // A PUT keeping it, and a PATCH of something else, keep it.
    expect((await http("PUT", item.uri, { inboundFilterId: own }, a)).json).toMatchObject({ inboundFilterId: own, outboundFilterId: null });
    expect((await http("PATCH", item.uri, { adminStateUp: false }, { ...a, ...MERGE })).json).toMatchObject({ inboundFilterId: own, adminStateUp: false });
  });

  it(`deleting a chain clears it from the ${kind.name} within ${CLEAR_MS} ms, announced; the ${kind.name} stays`, async () => {
    const c = await chain();
    const other = await chain();
    const both = await made({ inboundFilterId: c, outboundFilterId: c });
    const one = await made({ inboundFilterId: other, outboundFilterId: c });
    await http("GET", both.uri); // read once: the gateway's cache has it
    const deleted = await http("DELETE", `/chains/${c}`);
    expect(deleted.status, deleted.text).toBe(204);
    const since = Date.now();
    await waitFor(
      "the filters cleared",
      async () => {
        const [x, y] = [(await http("GET", both.uri)).json, (await http("GET", one.uri)).json];
        return x.inboundFilterId === null && x.outboundFilterId === null && y.outboundFilterId === null;
      },
      CLEAR_MS,
    );
    const elapsed = Date.now() - since;
    expect(elapsed).toBeLessThan(CLEAR_MS);
    const x = (await http("GET", both.uri)).json;
    expect(x).toMatchObject({ inboundFilter: null, outboundFilter: null });
    // The other chain stays where it was.
    expect((await http("GET", one.uri)).json).toMatchObject({ inboundFilterId: other, inboundFilter: `${fx.gw}/chains/${other}`, outboundFilterId: null });
    await waitFor("the updates on the bus", async () => [both.id, one.id].every((id) => fx.events.some((e) => e.subject.endsWith(`${kind.changes}.updated`) && e.data["id"] === id)), CLEAR_MS);
    // The deleted chain cannot be named again.
    expectError(await http("PUT", both.uri, { inboundFilterId: c }), 404);
  });

  it(`writes naming a chain while it is deleted never keep it: every ${kind.name} is clear within the bound`, async () => {
    const items = await Promise.all(Array.from({ length: 6 }, () => made()));
    for (let round = 0; round < 3; round++) {
      const c = await chain();
      const answers = await Promise.all([
        http("DELETE", `/chains/${c}`),
        ...items.map((item) => http("PATCH", item.uri, { inboundFilterId: c }, MERGE)),
      ]);
      expect(answers[0]!.status).toBe(204);
      // Each write either went first (and is cleared) or found the chain gone (404).
      for (const a of answers.slice(1)) expect([200, 404]).toContain(a.status);
      await waitFor("every filter cleared", async () => (await Promise.all(items.map((i) => http("GET", i.uri)))).every((r) => r.json.inboundFilterId === null), CLEAR_MS);
    }
  });

  // Each kind has mirror lists (policy.md §4's "Relations"); a kind without would skip these.
  if (!kind.mirrors) return;
  it("mirrors: a missing one is 404 naming it, in POST, PUT and PATCH; an existing one is stored; deleting it takes it out of the lists within the bound", async () => {
    const m = await mirror();
    const kept = await mirror();
    const missing = randomUUID();
    const bad = await create({ inboundMirrorIds: [m, missing] });
    expectError(bad, 404);
    expect(bad.json.message).toContain(missing);
    const item = await made({ inboundMirrorIds: [m, kept], outboundMirrorIds: [m] });
    expect(item).toMatchObject({ inboundMirrorIds: [m, kept], outboundMirrorIds: [m] });
    expectError(await http("PUT", item.uri, { outboundMirrorIds: [missing] }), 404);
    const patch = await http("PATCH", item.uri, { outboundMirrorIds: [m, missing] }, MERGE);
    expectError(patch, 404);
    expect(patch.json.message).toContain(missing);
    expect((await http("GET", item.uri)).json.outboundMirrorIds).toEqual([m]);
    // A tenant's administrator cannot see mirrors: naming one is a 404.
    const a = await as("A");
    expectError(await create({ inboundMirrorIds: [m] }, a), 404);

    expect((await http("DELETE", `/mirrors/${m}`)).status).toBe(204);
    await waitFor(
      "the mirror taken out of the lists",
      async () => {
        const now = (await http("GET", item.uri)).json;
        return JSON.stringify(now.inboundMirrorIds) === JSON.stringify([kept]) && JSON.stringify(now.outboundMirrorIds) === "[]";
      },
      CLEAR_MS,
    );
    expectError(await http("PUT", item.uri, { inboundMirrorIds: [m] }), 404);
  });

  it("deleting the port a mirror sends to deletes the mirror, which leaves the lists within the bound", async () => {
    const m = await mirrorTo();
    const item = await made({ outboundMirrorIds: [m.id] });
    expect((await http("DELETE", `/ports/${m.port}`)).status).toBe(204);
    await waitFor("the mirror taken out of the list", async () => (await http("GET", item.uri)).json.outboundMirrorIds?.length === 0, CLEAR_MS);
    expectError(await http("GET", `/mirrors/${m.id}`), 404);
  });
});

// A chain or mirror deleted while the service whose items name it is down: the DELETE does not
// wait for that service (204), and its durable consumer clears the filter and the mirror list
// once it is back. A consumer that only heard what was said while it ran would leave them.
describe.each([
  { domain: "bridge", kind: kinds[0]! },
  { domain: "routing", kind: kinds[1]! },
  { domain: "routing", kind: kinds[2]! },
])("the $domain service down while a chain and a mirror are deleted", ({ domain, kind }) => {
  it(`the ${kind.name}'s filter and mirror list are cleared within ${CLEAR_MS} ms of the service's return, announced`, async () => {
    const c = await chain();
    const kept = await chain();
    const m = await mirror();
    const made = await http("POST", await kind.collection({}), { inboundFilterId: c, outboundFilterId: kept, outboundMirrorIds: [m] });
    expect(made.status, made.text).toBe(201);
    const item: Item = made.json;
    await fx.stack.stopService(domain);
    try {
      const since = Date.now();
      expect((await http("DELETE", `/chains/${c}`)).status).toBe(204);
      expect((await http("DELETE", `/mirrors/${m}`)).status).toBe(204);
      // The policy service did not wait for the stopped one.
      expect(Date.now() - since).toBeLessThan(CLEAR_MS);
    } finally {
      await fx.stack.startServices(domain);
    }
    await waitFor(`the ${domain} service back`, async () => (await http("GET", `${kind.items}?limit=1`)).status === 200, 20_000);
    const back = Date.now();
    await waitFor(
      "the deleted chain and mirror cleared",
      async () => {
        const now = (await http("GET", item.uri)).json;
        return now.inboundFilterId === null && JSON.stringify(now.outboundMirrorIds) === "[]";
      },
      CLEAR_MS,
    );
    expect(Date.now() - back).toBeLessThan(CLEAR_MS);
    // The other chain stays; the change is announced.
    expect((await http("GET", item.uri)).json).toMatchObject({ inboundFilterId: null, inboundFilter: null, outboundFilterId: kept, outboundMirrorIds: [] });
    await waitFor("the update on the bus", async () => fx.events.some((e) => e.subject.endsWith(`${kind.changes}.updated`) && e.data["id"] === item.id), CLEAR_MS);
  });
});

describe("the policy service down", () => {
  it("a bridge write naming a new chain is 503 naming it and stores nothing; one naming none, or only the chain it has, succeeds", async () => {
    const c = await chain();
    const other = await chain();
    const keeps = (await http("POST", "/bridges", { name: "keeps", inboundFilterId: c })).json;
    const before = (await http("GET", "/bridges")).json.length;
    await fx.stack.stopService("policy");
    try {
      const r = await http("POST", "/bridges", { inboundFilterId: c });
      expectError(r, 503);
      expect(r.json.message).toContain("policy service");
      const put = await http("PUT", keeps.uri, { name: "keeps", inboundFilterId: c, outboundFilterId: other });
      expectError(put, 503);
      expect(put.json.message).toContain("policy service");
      expect((await http("GET", "/bridges")).json.length).toBe(before);
      expect((await http("GET", keeps.uri)).json).toMatchObject({ name: "keeps", inboundFilterId: c, outboundFilterId: null });
      expect((await http("POST", "/bridges", { name: "none" })).status).toBe(201);
      const same = await http("PUT", keeps.uri, { name: "renamed", inboundFilterId: c });
      expect(same.status, same.text).toBe(200);
      expect(same.json).toMatchObject({ name: "renamed", inboundFilterId: c });
    } finally {
      await fx.stack.startServices("policy");
    }
    await waitFor("the policy service", async () => (await http("POST", "/bridges", { inboundFilterId: c })).status === 201, 20_000);
  });
});
