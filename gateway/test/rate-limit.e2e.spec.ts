// The per-token request limit (docs/api.md, "Limits") with a limit large enough that a gateway
// counts a token's requests into Redis in blocks (a hundredth of the limit at once): shared by
// two gateways within the stated precision, refused past it with 429 and Retry-After, one
// user's count apart from another's, no Redis round trip while a block lasts, and each gateway
// holding the limit by itself while Redis is away.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, freePort, type HttpResult, httpClient, Stack } from "@vnm/e2e/harness";
import { TcpProxy } from "@vnm/e2e/tcp-proxy";

const LIMIT = 1000;
/** What a gateway takes from the shared count at once for this limit. */
const BLOCK = LIMIT / 100;
const env = { VNM_RATE_LIMIT: String(LIMIT), VNM_RATE_WINDOW_SECONDS: "3600" };

const stack = new Stack();
const http = httpClient(() => "", "application/json");
let one = "";
let two = "";
let viaProxy = "";
let proxy: TcpProxy;

beforeAll(async () => {
  proxy = new TcpProxy(await freePort(), stack.env()["REDIS_URL"]!);
  await proxy.open();
  // Only logins are needed: the requests counted are for the root document.
  await stack.startServices("identity");
  one = await stack.startGateway(env, false);
  two = await stack.startGateway(env, false);
  viaProxy = await stack.startGateway({ ...env, REDIS_URL: `redis://127.0.0.1:${proxy.port}` }, false);
  // A user per test: every token of a user shares the user's count.
  for (const name of USERS) {
    const r = await http("POST", `${one}/users`, { name: `${name}-${stack.id}`, password: PASSWORD, tenantId: `T-${stack.id}`, roles: ["tenant_user"] }, { "x-auth-token": stack.adminToken });
    if (r.status !== 201) throw new Error(`user ${name}: ${r.status} ${r.text}`);
  }
});

afterAll(async () => {
  await stack.stop();
  proxy.resume();
  await proxy.cut().catch(() => {});
});

const USERS = ["shared", "blocks", "alone"] as const;
const PASSWORD = randomBytes(16).toString("hex");
const login = (base: string, user: (typeof USERS)[number]) => stack.login(base, `${user}-${stack.id}`, PASSWORD);
const get = (base: string, token: string) => http("GET", `${base}/`, undefined, { "x-auth-token": token });

/** Sends `rounds` rounds of `perGateway` requests at once to each gateway; every answer, in order. */
async function burst(bases: string[], token: string, rounds: number, perGateway: number): Promise<HttpResult[]> {
  const all: HttpResult[] = [];
  for (let i = 0; i < rounds; i++) {
    all.push(...(await Promise.all(bases.flatMap((b) => Array.from({ length: perGateway }, () => get(b, token))))));
  }
  return all;
}

describe("a limit counted in blocks", () => {
  it("is shared by two gateways: never past the limit, at most a block short of it; then 429 with Retry-After", async () => {
    const token = await login(one, "shared");
    // 1,100 requests, ten at once at each gateway: those arriving together wait for one block.
    const answers = await burst([one, two], token, 55, 10);
    const allowed = answers.filter((r) => r.status === 200).length;
    expect(allowed).toBeLessThanOrEqual(LIMIT);
    // Short by at most a block per other gateway: the requests it holds unspent (docs/api.md).
    expect(allowed).toBeGreaterThanOrEqual(LIMIT - BLOCK);
    const refused = answers.filter((r) => r.status !== 200);
    for (const r of refused) expectError(r, 429);
    const retryAfter = Number(refused[0]!.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // Past the limit, both gateways refuse it.
    for (const base of [one, two]) expectError(await get(base, token), 429);
    // So is another token of the same user (logging in again gives no more); another user has a count of their own.
    const again = await login(two, "shared");
    for (const base of [one, two]) expectError(await get(base, again), 429);
    for (const base of [one, two]) expect((await get(base, stack.adminToken)).status).toBe(200);
  });

  it("costs no Redis round trip while a gateway's block lasts", async () => {
    const token = await login(viaProxy, "blocks");
    expect((await get(viaProxy, token)).status).toBe(200); // takes a block
    proxy.stall();
    try {
      // The rest of the block is spent without Redis: nothing waits for it.
      const started = performance.now();
      for (let i = 1; i < BLOCK; i++) expect((await get(viaProxy, token)).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(400);
      // The next block needs Redis: it waits for the command's timeout (500 ms), then the
      // gateway counts by itself (as when Redis is away).
      const next = performance.now();
      expect((await get(viaProxy, token)).status).toBe(200);
      expect(performance.now() - next).toBeGreaterThanOrEqual(400);
    } finally {
      proxy.resume();
    }
  });

  it("is held by each gateway by itself while Redis is away", async () => {
    const token = await login(viaProxy, "alone");
    await proxy.cut();
    try {
      const answers = await burst([viaProxy], token, 101, 10);
      expect(answers.filter((r) => r.status === 200)).toHaveLength(LIMIT);
      const refused = answers.filter((r) => r.status !== 200);
      expect(refused).toHaveLength(10);
      for (const r of refused) expectError(r, 429);
      expect(Number(refused[0]!.headers.get("retry-after"))).toBeGreaterThan(3500);
      // Another user has a count of their own there too.
      expect((await get(viaProxy, stack.adminToken)).status).toBe(200);
    } finally {
      await proxy.open();
    }
  });
});
