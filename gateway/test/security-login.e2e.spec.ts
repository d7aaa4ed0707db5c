// Password guessing against POST /login under hostile use. Attempts are counted (by the
// identity service, which applies the same limits to callers at its own gRPC port)
// before the password is checked (parallel guesses get no more checks than the limit), keyed by
// user name AND source address (an attacker cannot lock the real user out), and password
// hashing waits in a bounded queue (429 with Retry-After when full, never a slow gateway).
// Only the identity service runs: /login needs nothing else.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, Stack } from "@vnm/e2e/harness";

const LIMIT = 5;
const stack = new Stack({ VNM_TRUST_PROXY: "1", VNM_LOGIN_FAILURE_LIMIT: String(LIMIT) });
/** Another stack whose identity service checks one password at a time, with one waiting. */
const tight = new Stack({ VNM_TRUST_PROXY: "1", VNM_HASH_CONCURRENCY: "1", VNM_HASH_QUEUE: "1", VNM_LOGIN_FAILURE_LIMIT: "1000" });
let gw = "";
let tightGw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const basic = (name: string, password: string) => `Basic ${Buffer.from(`${name}:${password}`).toString("base64")}`;
const login = (base: string, name: string, password: string, from: string): Promise<HttpResult> =>
  http("POST", `${base}/login`, undefined, { authorization: basic(name, password), "x-forwarded-for": from });

/** Password checks the identity service has run: its Authenticate calls not refused by the limit (RESOURCE_EXHAUSTED), from its own metrics. */
async function passwordChecks(s: Stack): Promise<number> {
  const text = await (await fetch(`http://${s.metricsAddrs.get("identity")}/metrics`)).text();
  let n = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("vnm_grpc_server_calls_total") && line.includes("Authenticate") && !line.includes("RESOURCE_EXHAUSTED")) n += Number(line.split(" ").pop());
  }
  return n;
}

beforeAll(async () => {
  await Promise.all([stack.startServices("identity"), tight.startServices("identity")]);
  [gw, tightGw] = await Promise.all([stack.startGateway({}, false), tight.startGateway({}, false)]);
});

afterAll(async () => {
  await Promise.all([stack.stop(), tight.stop()]);
});

describe("login limits", () => {
  it("50 parallel wrong logins get at most the limit's worth of password checks", async () => {
    const before = await passwordChecks(stack);
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => login(gw, "admin", `wrong-${i}`, "198.51.100.7")));
    const checks = (await passwordChecks(stack)) - before;
    expect(checks).toBeLessThanOrEqual(LIMIT);
    expect(answers.filter((r) => r.status === 401)).toHaveLength(checks);
    for (const r of answers.filter((a) => a.status !== 401)) {
      expectError(r, 429);
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    }
  });

  it("the real admin logs in while an attacker hammers admin from another address", async () => {
    const attacker = await Promise.all(Array.from({ length: 30 }, (_, i) => login(gw, "admin", `guess-${i}`, "203.0.113.66")));
    expect(attacker.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    const real = await login(gw, "admin", stack.adminPassword, "192.0.2.10");
    expect(real.status).toBe(200);
    // The attacker's address stays refused, even with the right password (back-off, not a lock).
    expectError(await login(gw, "admin", stack.adminPassword, "203.0.113.66"), 429);
  });

  it("one source trying many user names meets the looser per-source limit", async () => {
    const answers: number[] = [];
    for (let i = 0; i < LIMIT * 10 + 3; i++) answers.push((await login(gw, `someone-${i}`, "not-a-password", "198.51.100.99")).status);
    expect(answers.slice(0, LIMIT * 10).every((s) => s === 401)).toBe(true);
    expect(answers.slice(LIMIT * 10)).toEqual([429, 429, 429]);
    // Another source is not affected.
    expect((await login(gw, "admin", stack.adminPassword, "198.51.100.100")).status).toBe(200);
  });

  it("a source that reaches the limit again waits twice as long (back-off)", async () => {
    const identity = await stack.startReplica("identity", { VNM_LOGIN_FAILURE_LIMIT: "2", VNM_LOGIN_WINDOW_SECONDS: "2" });
    const base = await stack.startGateway({ VNM_IDENTITY_ADDR: identity }, false);
    const refusal = async () => {
      for (let i = 0; i < 2; i++) expect((await login(base, "admin", "wrong-password", "192.0.2.77")).status).toBe(401);
      const r = await login(base, "admin", "wrong-password", "192.0.2.77");
      expectError(r, 429);
      return Number(r.headers.get("retry-after"));
    };
    expect(await refusal()).toBe(2);
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await refusal()).toBe(4);
  });

  it("a wrong user name and a wrong password answer alike", async () => {
    const noUser = await login(gw, "nobody-here", "whatever-password", "192.0.2.20");
    const badPassword = await login(gw, "admin", "whatever-password", "192.0.2.20");
    expectError(noUser, 401);
    expectError(badPassword, 401);
    expect(noUser.json.message).toBe(badPassword.json.message);
    expect(noUser.headers.get("www-authenticate")).toBe(badPassword.headers.get("www-authenticate"));
  });
});

describe("bounded password hashing", () => {
  it("when the queue is full a login is refused with 429 and Retry-After, the others are checked", async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => login(tightGw, `user-${i}`, "not-the-password", `198.18.0.${i + 1}`)),
    );
    const refused = answers.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expectError(r, 429);
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    expect(answers.filter((r) => r.status !== 429).every((r) => r.status === 401)).toBe(true);
    // Refused attempts were never checked, so they do not count against the caller.
    expect((await login(tightGw, "admin", tight.adminPassword, "198.18.0.1")).status).toBe(200);
  });
});
