// The HTTP edge under hostile use (issue 49): the client's address behind proxies
// (VNM_TRUST_PROXY: a hop count or the proxies' addresses, never "every hop"), no cookie
// carrying the token, request limits per user and per source (not per token), and an error body
// of bounded size whatever a body's number of unknown fields.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, Stack, startProcess } from "@vnm/e2e/harness";

const LOGIN_LIMIT = 5;
const USER_LIMIT = 20;
const SOURCE_LIMIT = 30;
const stack = new Stack({ VNM_LOGIN_FAILURE_LIMIT: String(LOGIN_LIMIT) });
/** Behind one proxy (a load balancer that appends its peer's address). */
let hops = "";
/** Behind proxies known by their addresses. */
let cidrs = "";
/** A tight per-user limit. */
let perUser = "";
/** A tight per-source limit, behind one proxy. */
let perSource = "";
const http = httpClient(() => hops, "application/json", () => stack.adminToken);
const basic = (name: string, password: string) => `Basic ${Buffer.from(`${name}:${password}`).toString("base64")}`;
const login = (base: string, name: string, password: string, forwardedFor: string): Promise<HttpResult> =>
  http("POST", `${base}/login`, undefined, { authorization: basic(name, password), "x-forwarded-for": forwardedFor });
const password = randomBytes(16).toString("hex");
const user = `edge-${stack.id}`;

beforeAll(async () => {
  await stack.startServices("identity", "bridge");
  [hops, cidrs, perUser, perSource] = await Promise.all([
    stack.startGateway({ VNM_TRUST_PROXY: "1" }, false),
    stack.startGateway({ VNM_TRUST_PROXY: "127.0.0.0/8, 10.0.0.0/8" }, false),
    stack.startGateway({ VNM_RATE_LIMIT: String(USER_LIMIT), VNM_RATE_WINDOW_SECONDS: "3600" }, false),
    stack.startGateway({ VNM_TRUST_PROXY: "1", VNM_SOURCE_RATE_LIMIT: String(SOURCE_LIMIT), VNM_RATE_WINDOW_SECONDS: "3600" }, false),
  ]);
  const r = await http("POST", "/users", { name: user, password, tenantId: `T-${stack.id}`, roles: ["tenant_admin"] });
  expect(r.status).toBe(201);
}, 180_000);

afterAll(async () => {
  await stack.stop();
});

describe("the client's address behind proxies", () => {
  it("one trusted hop: the address the proxy appended counts, whatever the client wrote left of it", async () => {
    const answers: number[] = [];
    for (let i = 0; i < LOGIN_LIMIT + 3; i++) answers.push((await login(hops, "admin", `wrong-${i}`, `203.0.113.${i + 1}, 198.51.100.66`)).status);
    expect(answers.slice(0, LOGIN_LIMIT)).toEqual(Array(LOGIN_LIMIT).fill(401));
    expect(answers.slice(LOGIN_LIMIT)).toEqual([429, 429, 429]);
  });

  it("a client writing its victim's address cannot lock the victim out", async () => {
    for (let i = 0; i < LOGIN_LIMIT + 3; i++) await login(hops, "admin", `guess-${i}`, "192.0.2.10, 198.51.100.67");
    expectError(await login(hops, "admin", "guess-again", "192.0.2.10, 198.51.100.67"), 429);
    // The victim, behind the same proxy.
    expect((await login(hops, "admin", stack.adminPassword, "192.0.2.10")).status).toBe(200);
  });

  it("proxies named by CIDR: the right-most address that is none of them counts", async () => {
    const answers: number[] = [];
    for (let i = 0; i < LOGIN_LIMIT + 2; i++) answers.push((await login(cidrs, "admin", `wrong-${i}`, `198.18.${i}.1, 203.0.113.200, 10.0.0.${i + 1}`)).status);
    expect(answers.slice(0, LOGIN_LIMIT)).toEqual(Array(LOGIN_LIMIT).fill(401));
    expect(answers.slice(LOGIN_LIMIT)).toEqual([429, 429]);
    // Another client behind the same proxies is not affected.
    expect((await login(cidrs, "admin", stack.adminPassword, "203.0.113.201, 10.0.0.1")).status).toBe(200);
  });

  it("VNM_TRUST_PROXY=true (believe every hop) stops the gateway at start, naming the variable", async () => {
    const proc = startProcess("gateway/src/main.ts", stack.gatewayEnv(0, { VNM_TRUST_PROXY: "true" }));
    const code = await new Promise<number | null>((resolve) => {
      const t = setTimeout(() => resolve(null), 60_000);
      proc.child.once("exit", (c) => {
        clearTimeout(t);
        resolve(c);
      });
    });
    await proc.stop();
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(proc.output.join("")).toContain("VNM_TRUST_PROXY");
  }, 90_000);
});

describe("no cookie", () => {
  it("a browser-like login (Sec-Fetch-Mode) gets no cookie, and a cookie alone is no credential", async () => {
    const r = await login(hops, user, password, "192.0.2.30");
    expect(r.status).toBe(200);
    expect(r.headers.get("set-cookie")).toBeNull();
    expectError(await http("GET", "/bridges", undefined, { cookie: `sessionId=${r.json.key}`, "x-auth-token": "" }), 401);
  });
});

describe("request limits", () => {
  it("every token of a user shares the user's count: logging in again gives no more", async () => {
    const first = await stack.login(perUser, user, password);
    const second = await stack.login(perUser, user, password);
    for (let i = 0; i < USER_LIMIT; i++) expect((await http("GET", `${perUser}/`, undefined, { "x-auth-token": i % 2 ? first : second })).status).toBe(200);
    const refused = await http("GET", `${perUser}/`, undefined, { "x-auth-token": first });
    expectError(refused, 429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(3500);
    const third = await stack.login(perUser, user, password);
    expectError(await http("GET", `${perUser}/`, undefined, { "x-auth-token": third }), 429);
    // Another user has a count of their own.
    expect((await http("GET", `${perUser}/`, undefined, { "x-auth-token": stack.adminToken })).status).toBe(200);
  });

  it("one source is limited whatever tokens it sends, another source is not", async () => {
    const from = (ip: string, token: string) => http("GET", `${perSource}/`, undefined, { "x-auth-token": token, "x-forwarded-for": ip });
    const token = await stack.login(perSource, user, password);
    for (let i = 0; i < SOURCE_LIMIT; i++) expect((await from("192.0.2.50", i % 2 ? token : stack.adminToken)).status).toBe(200);
    const refused = await from("192.0.2.50", token);
    expectError(refused, 429);
    expect(refused.json.message).toContain("address");
    // Counted before the token: a forged one is refused as quickly.
    expectError(await from("192.0.2.50", "forged.token.value"), 429);
    expect((await from("192.0.2.51", token)).status).toBe(200);
  });
});

describe("?fieldValidation=Strict", () => {
  it("a body of 75,000 unknown fields gets a short answer: the first violations and how many more", async () => {
    const fields: Record<string, number> = { name: 0 };
    for (let i = 0; i < 75_000; i++) fields[`unkn${i}`] = 0;
    const body = JSON.stringify({ ...fields, name: "strict" });
    expect(body.length).toBeGreaterThan(900_000);
    const r = await http("POST", "/bridges?fieldValidation=Strict", body);
    expectError(r, 400);
    expect(r.text.length).toBeLessThan(32 * 1024);
    expect(r.json.violations).toHaveLength(100);
    expect(r.json.violations[0]).toEqual({ property: "unkn0", message: "is not a field of this resource" });
    expect(r.json.message).toContain("75000");
    expect(r.json.message).toContain("74900 more");
  });

  it("a field name as long as the body is not repeated whole", async () => {
    const long = "n".repeat(500_000);
    const r = await http("POST", "/bridges?fieldValidation=Strict", JSON.stringify({ name: "strict", [long]: 1 }));
    expectError(r, 400);
    expect(r.text.length).toBeLessThan(4 * 1024);
    expect(r.json.violations[0].property.startsWith("nnnn")).toBe(true);
  });
});
