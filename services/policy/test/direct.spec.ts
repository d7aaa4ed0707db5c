// The policy service reached directly over gRPC (no gateway): it validates its input, keeps each
// tenant to its own chains and rules, and keeps a chain's positions 1..n under concurrent writes.
import * as grpc from "@grpc/grpc-js";
import { DEPS, type DirectService, directService } from "@vnm/kit/testing";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
const call = (rpc: string, req: unknown, token?: string) => svc.call("vnm.policy.v1.PolicyService", rpc, req, token);

beforeAll(async () => {
  svc = await directService("policy");
});

afterAll(async () => {
  await svc.stop();
});

it("refuses bad fields naming each, and a type's missing required field", async () => {
  const chain = (await call("CreateChain", { chain: { name: "c" } })).res;
  const cases: [Record<string, unknown>, string[]][] = [
    [{}, ["type"]],
    [{ type: "continue" }, ["type"]],
    [{ type: "accept", nwSrcLength: 33, dlSrc: "x", position: -1 }, ["position", "nwSrcLength", "dlSrc"]],
    [{ type: "jump" }, ["jumpChainId"]],
    [{ type: "snat", flowAction: "redirect" }, ["flowAction", "natTargets"]],
  ];
  for (const [rule, properties] of cases) {
    const r = await call("CreateRule", { chainId: chain.id, rule });
    expect(r.err?.code, JSON.stringify(rule)).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r).map((v: { property: string }) => v.property)).toEqual(properties);
  }
  expect((await call("ListChainRules", { chainId: chain.id })).res.items ?? []).toEqual([]);
});

it("keeps a tenant to its own chains: another's chain, rules and rule list are NOT_FOUND, and so is a jump into it", async () => {
  const a = svc.token({ role: "tenant_admin", tenantId: "A" });
  const b = svc.token({ role: "tenant_admin", tenantId: "B" });
  const ofA = (await call("CreateChain", { chain: { name: "a" } }, a)).res;
  expect(ofA.tenantId).toBe("A");
  const ofB = (await call("CreateChain", { chain: { name: "b" } }, b)).res;
  const rule = (await call("CreateRule", { chainId: ofA.id, rule: { type: "accept" } }, a)).res;
  expect((await call("GetChain", { id: ofA.id }, b)).err?.code).toBe(grpc.status.NOT_FOUND);
  expect((await call("ListChainRules", { chainId: ofA.id }, b)).err?.code).toBe(grpc.status.NOT_FOUND);
  expect((await call("GetRule", { id: rule.id }, b)).err?.code).toBe(grpc.status.NOT_FOUND);
  expect((await call("CreateRule", { chainId: ofA.id, rule: { type: "accept" } }, b)).err?.code).toBe(grpc.status.NOT_FOUND);
  const jump = await call("CreateRule", { chainId: ofA.id, rule: { type: "jump", jumpChainId: ofB.id } }, a);
  expect(jump.err?.code).toBe(grpc.status.NOT_FOUND);
  expect(jump.err?.details).toContain(ofB.id);
  expect((await call("ListChains", {}, b)).res.items.map((c: { id: string }) => c.id)).toEqual([ofB.id]);
});

it("refuses mirrors to non-administrators", async () => {
  const a = svc.token({ role: "tenant_admin", tenantId: "A" });
  expect((await call("ListMirrors", {}, a)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});

it("keeps positions 1..n through 30 concurrent inserts at the first places and 10 deletes", async () => {
  const chain = (await call("CreateChain", { chain: { name: "busy" } })).res;
  const seed: string[] = [];
  for (let i = 0; i < 10; i++) seed.push((await call("CreateRule", { chainId: chain.id, rule: { type: "accept", position: i + 1 } })).res.id);
  const writes = [
    ...Array.from({ length: 30 }, (_, i) => call("CreateRule", { chainId: chain.id, rule: { type: "drop", position: 1 + (i % 4) } })),
    ...seed.map((id) => call("DeleteRule", { id })),
  ];
  for (const r of await Promise.all(writes)) expect(r.err).toBeNull();
  const items = (await call("ListChainRules", { chainId: chain.id })).res.items as { id: string; position: number }[];
  expect(items.map((r) => r.position)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  for (const r of items) expect((await call("GetRule", { id: r.id })).res.position).toBe(r.position);
});

it("writes one row per insert, wherever it goes, until two neighbours' ranks meet (then the chain is renumbered once)", async () => {
  const chain = (await call("CreateChain", { chain: { name: "long" } })).res;
  for (let i = 0; i < 200; i++) expect((await call("CreateRule", { chainId: chain.id, rule: { type: "accept", position: i + 1 } })).err).toBeNull();
  const db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  try {
    // Each row's xmin: the transaction that last wrote it.
    const versions = async () => new Map((await db.query<{ id: string; xmin: string }>(`SELECT id, xmin::text FROM "${svc.schema}".rules WHERE chain_id = $1`, [chain.id])).rows.map((r) => [r.id, r.xmin]));
    const rewritten = (before: Map<string, string>, after: Map<string, string>) => [...before].filter(([id, x]) => after.get(id) !== x).length;
    let before = await versions();
    for (const position of [1, 100, 202]) {
      const made = await call("CreateRule", { chainId: chain.id, rule: { type: "drop", position } });
      expect(made.res.position).toBe(position);
      const after = await versions();
      expect(rewritten(before, after), `an insert at ${position}`).toBe(0);
      before = after;
    }
    // Inserts at one place halve the gap each time: 16 fit between two ranks 65,536 apart.
    let renumbered = 0;
    for (let i = 0; i < 20; i++) {
      expect((await call("CreateRule", { chainId: chain.id, rule: { type: "drop", position: 50 } })).res.position).toBe(50);
      const after = await versions();
      if (rewritten(before, after) > 0) renumbered++;
      before = after;
    }
    expect(renumbered).toBe(1);
    const items = (await call("ListChainRules", { chainId: chain.id })).res.items as { position: number }[];
    expect(items.map((r) => r.position)).toEqual(Array.from({ length: 223 }, (_, i) => i + 1));
  } finally {
    await db.end();
  }
});

it("deletes a chain while jump rules into it are inserted from chains on both sides of its id: each insert lands before the delete (and goes with it) or is NOT_FOUND, never ABORTED", async () => {
  for (let round = 0; round < 200; round++) {
    const target = (await call("CreateChain", { chain: { name: `raced${round}` } })).res;
    const sources = [];
    for (let i = 0; i < 6; i++) sources.push((await call("CreateChain", { chain: { name: `src${i}` } })).res);
    const insert = (s: { id: string }) => call("CreateRule", { chainId: s.id, rule: { type: "jump", jumpChainId: target.id } });
    const inserts = [];
    for (const s of sources) inserts.push(insert(s));
    const removed = call("DeleteChain", { id: target.id });
    for (let n = 0; n < 2; n++) for (const s of sources) inserts.push(insert(s));
    for (const r of await Promise.all(inserts)) expect([null, grpc.status.NOT_FOUND], r.err?.details).toContain(r.err?.code ?? null);
    expect((await removed).err).toBeNull();
    for (const s of sources) {
      const left = ((await call("ListChainRules", { chainId: s.id })).res.items ?? []) as { jumpChainId?: string; position: number }[];
      expect(left.filter((r) => r.jumpChainId === target.id)).toEqual([]);
    }
  }
});
