// End to end for a chain's rules, the policy spec's §2: every type made and read back with its
// own fields (MACs and masks in lower case, the fragment policy computed), each type's required
// fields and each condition field's limits (400 naming the field, nothing stored); positions
// (inserted at the start, the middle and the end; past the end or negative refused with nothing
// stored; a delete closes the gap; many inserts at one place; concurrent inserts and deletes leave
// 1..n); the list's pages in position order. Real policy service, gateway, Postgres, NATS, Redis.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, useStack } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
type Item = Record<string, unknown> & { id: string; uri: string };
type Chain = Item & { rules: string };

const newChain = async (): Promise<Chain> => {
  const r = await http("POST", "/chains", { name: "c" });
  expect(r.status, r.text).toBe(201);
  return r.json as Chain;
};
const post = (chain: Chain, body: Record<string, unknown>) => http("POST", chain.rules, body);
const addRule = async (chain: Chain, body: Record<string, unknown>): Promise<Item> => {
  const r = await post(chain, body);
  expect(r.status, r.text).toBe(201);
  return r.json as Item;
};
const props = (r: HttpResult) => ((r.json.violations as { property: string }[] | undefined) ?? []).map((v) => v.property);
const list = async (chain: Chain) => (await http("GET", chain.rules)).json as Item[];
const ids = async (chain: Chain) => (await list(chain)).map((r) => r.id);

/** The chain's list is 1..n in order, and each rule's own GET says the same position. */
async function expectDense(chain: Chain, expected?: string[]): Promise<void> {
  const items = await list(chain);
  expect(items.map((r) => r.position)).toEqual(items.map((_, i) => i + 1));
  if (expected) expect(items.map((r) => r.id)).toEqual(expected);
  for (const r of items) expect((await http("GET", r.uri)).json.position).toBe(r.position);
}

const PORT = "5c3b6a0e-3f7e-4d51-9d8a-2f7b1f0c1a11";
const REQUEST = "7d2a4b6c-1e3f-4a5b-8c7d-9e0f1a2b3c4d";

describe("types (policy spec §2)", () => {
  it("makes each type and reads it back with its own fields and the condition's defaults", async () => {
    const chain = await newChain();
    const target = await newChain();
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ type: "accept" }, { fragmentPolicy: "any" }],
      [{ type: "drop" }, {}],
      [{ type: "reject" }, {}],
      [{ type: "return" }, {}],
      [{ type: "jump", jumpChainId: target.id, jumpChainName: "target" }, { jumpChainId: target.id, jumpChainName: "target" }],
      [
        { type: "dnat", flowAction: "accept", natTargets: [{ addressFrom: "10.0.0.1", addressTo: "10.0.0.1" }] },
        { flowAction: "accept", natTargets: [{ addressFrom: "10.0.0.1", addressTo: "10.0.0.1", portFrom: 0, portTo: 0 }], fragmentPolicy: "any" },
      ],
      [
        { type: "snat", flowAction: "continue", natTargets: [{ addressFrom: "10.0.0.1", addressTo: "10.0.0.9", portFrom: 1000, portTo: 2000 }] },
        { flowAction: "continue", natTargets: [{ addressFrom: "10.0.0.1", addressTo: "10.0.0.9", portFrom: 1000, portTo: 2000 }], fragmentPolicy: "unfragmented" },
      ],
      [{ type: "rev_dnat", flowAction: "return" }, { flowAction: "return", fragmentPolicy: "any" }],
      [{ type: "rev_snat", flowAction: "accept" }, { flowAction: "accept" }],
      [
        { type: "l2_transform", flowAction: "redirect", pushVlan: 10, targetPortId: PORT, ingress: true },
        { flowAction: "redirect", pushVlan: 10, targetPortId: PORT, ingress: true, popVlan: false, failOpen: false },
      ],
      [{ type: "trace", requestId: REQUEST, limit: 100 }, { requestId: REQUEST, limit: 100 }],
    ];
    for (const [body, shown] of cases) {
      const r = await post(chain, body);
      expect(r.status, `${body["type"]}: ${r.text}`).toBe(201);
      expect(r.headers.get("content-type")).toBe(V("Rule-v2"));
      expect(r.headers.get("location")).toBe(`${fx.gw}/rules/${r.json.id}`);
      const expected = { ...body, ...shown, id: r.json.id, chainId: chain.id, position: 1, uri: `${fx.gw}/rules/${r.json.id}`, condInvert: false, invNwSrc: false, nwSrcLength: 0, nwDstLength: 0 };
      expect(r.json, String(body["type"])).toMatchObject(expected);
      const got = await http("GET", r.json.uri, undefined, { accept: V("Rule-v2") });
      expect(got.status).toBe(200);
      expect(got.json).toMatchObject(expected);
      expect(got.json.tenantId).toBeUndefined();
    }
    const all = await http("GET", chain.rules, undefined, { accept: V("collection.Rule-v2") });
    expect(all.headers.get("content-type")).toBe(V("collection.Rule-v2"));
    expect((all.json as Item[]).map((r) => r.type)).toEqual(cases.map(([b]) => b["type"]).reverse());
  });

  it("reads every condition field back as sent, MACs and masks in lower case, flags as sent", async () => {
    const chain = await newChain();
    const cond = {
      nwSrcAddress: "10.0.0.0",
      nwSrcLength: 8,
      nwDstAddress: "192.168.1.1",
      nwDstLength: 32,
      nwProto: 6,
      nwTos: 16,
      tpSrc: { start: 1000, end: 2000 },
      tpDst: { start: 80, end: 80 },
      dlType: 0x0800,
      dlSrc: "AA:BB:CC:DD:EE:0F",
      dlDst: "02:00:00:00:00:01",
      dlSrcMask: "FFFF.FFFF.0000",
      dlDstMask: "ffff.0000.0000",
      inPorts: [PORT],
      outPorts: [REQUEST, PORT],
      portGroup: randomUUID(),
      inPortGroup: randomUUID(),
      outPortGroup: randomUUID(),
      ipAddrGroupSrc: randomUUID(),
      ipAddrGroupDst: randomUUID(),
      traversedDevice: randomUUID(),
      vlan: 100,
      icmpDataSrcIpAddress: "1.2.3.4",
      icmpDataSrcIpLength: 24,
      icmpDataDstIpAddress: "5.6.7.8",
      icmpDataDstIpLength: 16,
      fragmentPolicy: "unfragmented",
      condInvert: true,
      matchForwardFlow: true,
      matchReturnFlow: false,
      noVlan: true,
      matchNwDstRewritten: true,
      invNwSrc: true,
      invDlSrc: true,
      invIcmpDataDstIp: true,
    };
    const r = await addRule(chain, { type: "drop", ...cond });
    const expected = { ...cond, dlSrc: "aa:bb:cc:dd:ee:0f", dlSrcMask: "ffff.ffff.0000", invNwDst: false, invTraversedDevice: false };
    expect(r).toMatchObject(expected);
    expect((await http("GET", r.uri)).json).toMatchObject(expected);
  });

  it("computes fragmentPolicy: header with transport ports, any without; unfragmented for a NAT rule that is no floating IP", async () => {
    const chain = await newChain();
    expect((await addRule(chain, { type: "accept", tpDst: { start: 22, end: 22 } })).fragmentPolicy).toBe("header");
    expect((await addRule(chain, { type: "accept", fragmentPolicy: "nonheader" })).fragmentPolicy).toBe("nonheader");
    const nat = { type: "dnat", flowAction: "accept", natTargets: [{ addressFrom: "10.0.0.1", addressTo: "10.0.0.1" }] };
    expect((await addRule(chain, { ...nat, fragmentPolicy: "header" })).fragmentPolicy).toBe("header");
    expect((await addRule(chain, { ...nat, tpSrc: { start: 1, end: 2 } })).fragmentPolicy).toBe("unfragmented");
    const two = { ...nat, natTargets: [{ addressFrom: "10.0.0.1", addressTo: "10.0.0.2" }] };
    expect((await addRule(chain, two)).fragmentPolicy).toBe("unfragmented");
    const before = await ids(chain);
    for (const body of [
      { type: "accept", tpSrc: { start: 1, end: 2 }, fragmentPolicy: "any" },
      { type: "drop", tpDst: { start: 1, end: 2 }, fragmentPolicy: "nonheader" },
      { ...two, fragmentPolicy: "any" },
      { ...nat, tpSrc: { start: 1, end: 2 }, fragmentPolicy: "header" },
    ]) {
      const bad = await post(chain, body);
      expectError(bad, 400);
      expect(props(bad)).toEqual(["fragmentPolicy"]);
    }
    expect(await ids(chain)).toEqual(before);
  });

  it("refuses each type's missing required field, and a type that is none, with 400 naming it and nothing stored", async () => {
    const chain = await newChain();
    const target = "10.0.0.1";
    const cases: [Record<string, unknown>, string][] = [
      [{}, "type"],
      [{ type: "continue" }, "type"],
      [{ type: "allow" }, "type"],
      [{ type: "ACCEPT" }, "type"],
      [{ type: "jump" }, "jumpChainId"],
      [{ type: "dnat", natTargets: [{ addressFrom: target, addressTo: target }] }, "flowAction"],
      [{ type: "snat", flowAction: "accept" }, "natTargets"],
      [{ type: "snat", flowAction: "accept", natTargets: [] }, "natTargets"],
      [{ type: "dnat", flowAction: "accept", natTargets: [{ addressFrom: target }] }, "natTargets"],
      [{ type: "dnat", flowAction: "accept", natTargets: [{ addressTo: target }] }, "natTargets"],
      [{ type: "dnat", flowAction: "redirect", natTargets: [{ addressFrom: target, addressTo: target }] }, "flowAction"],
      [{ type: "rev_dnat" }, "flowAction"],
      [{ type: "rev_snat", flowAction: "redirect" }, "flowAction"],
      [{ type: "l2_transform" }, "flowAction"],
      [{ type: "l2_transform", flowAction: "continue" }, "flowAction"],
      [{ type: "trace" }, "requestId"],
    ];
    for (const [body, property] of cases) {
      const r = await post(chain, body);
      expectError(r, 400);
      expect(props(r), JSON.stringify(body)).toContain(property);
    }
    expect(await ids(chain)).toEqual([]);
  });

  it("refuses bad condition and own values with 400 naming the field", async () => {
    const chain = await newChain();
    const cases: [Record<string, unknown>, string][] = [
      [{ nwSrcAddress: "10.0.0" }, "nwSrcAddress"],
      [{ nwDstAddress: "::1" }, "nwDstAddress"],
      [{ nwSrcLength: 33 }, "nwSrcLength"],
      [{ nwDstLength: -1 }, "nwDstLength"],
      [{ nwProto: 256 }, "nwProto"],
      [{ nwTos: -1 }, "nwTos"],
      [{ tpSrc: { start: 0, end: 10 } }, "tpSrc"],
      [{ tpDst: { start: 10, end: 65536 } }, "tpDst"],
      [{ tpDst: { start: 20, end: 10 } }, "tpDst"],
      [{ tpSrc: { end: 10 } }, "tpSrc"],
      [{ dlType: 0x05ff }, "dlType"],
      [{ dlType: 0x10000 }, "dlType"],
      [{ dlSrc: "aa:bb:cc:dd:ee" }, "dlSrc"],
      [{ dlDst: "aa-bb-cc-dd-ee-ff" }, "dlDst"],
      [{ dlSrcMask: "ffff.ffff" }, "dlSrcMask"],
      [{ dlDstMask: "ff:ff:ff:00:00:00" }, "dlDstMask"],
      [{ inPorts: ["nope"] }, "inPorts"],
      [{ portGroup: "nope" }, "portGroup"],
      [{ traversedDevice: 1 }, "traversedDevice"],
      [{ vlan: 4096 }, "vlan"],
      [{ icmpDataSrcIpAddress: "1.2.3.256" }, "icmpDataSrcIpAddress"],
      [{ icmpDataDstIpLength: 33 }, "icmpDataDstIpLength"],
      [{ fragmentPolicy: "sometimes" }, "fragmentPolicy"],
      [{ condInvert: "yes" }, "condInvert"],
      [{ position: -1 }, "position"],
      [{ type: "l2_transform", flowAction: "accept", pushVlan: 65536 }, "pushVlan"],
      [{ type: "l2_transform", flowAction: "accept", targetPortId: "nope" }, "targetPortId"],
      [{ type: "trace", requestId: "nope" }, "requestId"],
      [{ type: "jump", jumpChainId: "nope" }, "jumpChainId"],
      [{ type: "dnat", flowAction: "accept", natTargets: [{ addressFrom: "1.2.3", addressTo: "1.2.3.4" }] }, "natTargets"],
      [{ type: "snat", flowAction: "accept", natTargets: [{ addressFrom: "1.2.3.4", addressTo: "1.2.3.4", portFrom: 70000 }] }, "natTargets"],
    ];
    for (const [body, property] of cases) {
      const r = await post(chain, { type: "accept", ...body });
      expectError(r, 400);
      expect(props(r), JSON.stringify(body)).toContain(property);
    }
    expect(await ids(chain)).toEqual([]);
  });

  it("has no update: PUT is 405 with Allow; a body's chainId is ignored; a missing chain is 404", async () => {
    const chain = await newChain();
    const other = await newChain();
    const r = await addRule(chain, { type: "accept", chainId: other.id });
    expect(r.chainId).toBe(chain.id);
    const put = await http("PUT", r.uri, { type: "drop" });
    expectError(put, 405);
    expect(put.headers.get("allow")).toMatch(/DELETE/);
    expect((await http("GET", r.uri)).json.type).toBe("accept");
    expectError(await http("POST", `/chains/${randomUUID()}/rules`, { type: "accept" }), 404);
    expectError(await http("GET", `/chains/${randomUUID()}/rules`), 404);
    expectError(await http("GET", `/rules/${randomUUID()}`), 404);
    expectError(await http("DELETE", `/rules/${randomUUID()}`), 404);
  });
});

describe("positions (policy spec §2)", () => {
  it("inserts first when none, null or 0 is given, in the middle and at the end; shows 1..n", async () => {
    const chain = await newChain();
    const a = await addRule(chain, { type: "accept" });
    const b = await addRule(chain, { type: "accept", position: null });
    const c = await addRule(chain, { type: "accept", position: 0 });
    await expectDense(chain, [c.id, b.id, a.id]);
    const mid = await addRule(chain, { type: "drop", position: 2 });
    expect(mid.position).toBe(2);
    const end = await addRule(chain, { type: "drop", position: 5 });
    expect(end.position).toBe(5);
    const first = await addRule(chain, { type: "drop", position: 1 });
    await expectDense(chain, [first.id, c.id, mid.id, b.id, a.id, end.id]);
  });

  it("refuses n+2 and -1 with 400 on position, and stores nothing", async () => {
    const chain = await newChain();
    const a = await addRule(chain, { type: "accept" });
    const b = await addRule(chain, { type: "accept", position: 2 });
    for (const position of [4, 100, -1]) {
      const r = await post(chain, { type: "accept", position });
      expectError(r, 400);
      expect(props(r)).toEqual(["position"]);
    }
    await expectDense(chain, [a.id, b.id]);
    const empty = await newChain();
    expectError(await post(empty, { type: "accept", position: 2 }), 400);
    expect(await ids(empty)).toEqual([]);
  });

  it("a delete closes the gap", async () => {
    const chain = await newChain();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await addRule(chain, { type: "accept", position: i + 1 })).id);
    expect((await http("DELETE", `/rules/${made[2]}`)).status).toBe(204);
    await expectDense(chain, [made[0]!, made[1]!, made[3]!, made[4]!]);
    expect((await http("DELETE", `/rules/${made[0]}`)).status).toBe(204);
    await expectDense(chain, [made[1]!, made[3]!, made[4]!]);
  });

  it("keeps the order through many inserts at one place (the ranks run out and the chain is renumbered)", async () => {
    const chain = await newChain();
    const expected: string[] = [];
    expected.push((await addRule(chain, { type: "accept" })).id);
    expected.push((await addRule(chain, { type: "accept", position: 2 })).id);
    for (let i = 0; i < 40; i++) {
      const r = await addRule(chain, { type: "drop", position: 2 });
      expect(r.position).toBe(2);
      expected.splice(1, 0, r.id);
    }
    expect(await ids(chain)).toEqual(expected);
    await expectDense(chain);
  });

  it("pages the list in position order (limit and marker)", async () => {
    const chain = await newChain();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await addRule(chain, { type: "accept", position: i + 1 })).id);
    const first = await http("GET", `${chain.rules}?limit=2`);
    expect((first.json as Item[]).map((r) => [r.id, r.position])).toEqual([
      [made[0], 1],
      [made[1], 2],
    ]);
    const rest = await http("GET", `${chain.rules}?limit=10&marker=${made[1]}`);
    expect((rest.json as Item[]).map((r) => [r.id, r.position])).toEqual([
      [made[2], 3],
      [made[3], 4],
      [made[4], 5],
    ]);
    expectError(await http("GET", `${chain.rules}?marker=${randomUUID()}`), 400);
  });

  it("filters the list by a field (?type=), in position order; a bad filter value is a 400 naming it", async () => {
    const chain = await newChain();
    const a = await addRule(chain, { type: "drop" });
    await addRule(chain, { type: "accept", position: 2 });
    const c = await addRule(chain, { type: "drop", position: 3 });
    const drops = (await http("GET", `${chain.rules}?type=drop`)).json as Item[];
    expect(drops.map((r) => [r.id, r.position])).toEqual([
      [a.id, 1],
      [c.id, 3],
    ]);
    const bad = await http("GET", `${chain.rules}?nwSrcAddress=nope`);
    expectError(bad, 400);
    expect(props(bad)).toEqual(["nwSrcAddress"]);
  });

  it("concurrent inserts and deletes in one chain leave positions 1..n, no gap, no duplicate", async () => {
    const chain = await newChain();
    const seed: string[] = [];
    for (let i = 0; i < 10; i++) seed.push((await addRule(chain, { type: "accept", position: i + 1 })).id);
    const writes: Promise<HttpResult>[] = [];
    for (let i = 0; i < 20; i++) writes.push(post(chain, { type: "drop", position: 1 + (i % 3) }));
    for (const id of seed.slice(0, 10)) writes.push(http("DELETE", `/rules/${id}`));
    const answers = await Promise.all(writes);
    expect(answers.map((a) => a.status)).toEqual([...Array(20).fill(201), ...Array(10).fill(204)]);
    const items = await list(chain);
    expect(items).toHaveLength(20);
    expect(new Set(items.map((r) => r.id)).size).toBe(20);
    await expectDense(chain);
    expect(items.every((r) => r.type === "drop")).toBe(true);
  });
});
