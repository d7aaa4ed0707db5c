// The API's handling of one request, end to end inside the gateway and nothing else: the app
// (createApp) with the real catalog, in front of an upstream that records each call and answers
// as a service would. What reaches the service (the RPC, its request, the caller's token, the
// filters), what is refused before it is called, and how its answers and errors become HTTP.
import { generateKeyPairSync } from "node:crypto";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ApiError, createLogger, FILTER_KEY, localBus, loadCatalog, Metrics, tokenClaims, type Upstream, USER_AUDIENCE } from "@vnm/kit";
import { rateLimiter } from "@vnm/kit/limits";
import { signEdDsa } from "@vnm/kit/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createApp } from "./app.ts";
import { memoryCache } from "./cache.ts";

const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const KID = "dispatch-test";
const BRIDGES = "vnm.bridge.v1.BridgeService";
const ID = "3f2a3c3e-8a57-4d0e-9a43-6c1f7b0e2d11";
/** Items the error tests ask for: never read before, so no cached copy answers for the service. */
const MISSING = "3f2a3c3e-8a57-4d0e-9a43-6c1f7b0e2d12";
const BROKEN = "3f2a3c3e-8a57-4d0e-9a43-6c1f7b0e2d13";

/** A token the identity service would have signed for `role`, valid for ten minutes. */
function token(role: "admin" | "tenant_admin" = "admin", tenantId: string | null = null): string {
  const exp = Math.floor(Date.now() / 1000) + 600;
  return signEdDsa(tokenClaims({ userId: `u-${role}`, name: role, role, tenantId, exp, gen: 1 }, USER_AUDIENCE) as Record<string, unknown>, privateKey, KID);
}

interface Call {
  service: string;
  rpc: string;
  request: Record<string, unknown>;
  token?: string;
  extra?: Record<string, string>;
}

/** The services as the gateway sees them: identity's key, token and generation calls, and one answer (or error) per bridge RPC. */
function upstream(calls: Call[], answers: Map<string, () => Record<string, unknown>>): Upstream {
  const x = (publicKey.export({ format: "jwk" }) as { x: string }).x;
  const identity: Record<string, () => Record<string, unknown>> = {
    GetSigningKeys: () => ({ keys: [{ kid: KID, x }] }),
    IssueServiceToken: () => ({ token: "service-token", expires: Math.floor(Date.now() / 1000) + 600 }),
    GetTokenGeneration: () => ({ generation: 1 }),
  };
  return {
    async call(service, rpc, request, _timeoutMs, tok, _requestId, extra) {
      const answer = service === BRIDGES ? answers.get(rpc) : identity[rpc];
      if (service === BRIDGES) calls.push({ service, rpc, request: request as Record<string, unknown>, token: tok, extra });
      if (!answer) throw new Error(`no answer for ${service}/${rpc}`);
      return { response: answer(), changes: [], filtered: true };
    },
    health: async () => true,
    close() {},
  };
}

const calls: Call[] = [];
const answers = new Map<string, () => Record<string, unknown>>();
let server: Server;
let base = "";
let draining = false;

beforeAll(async () => {
  const catalog = loadCatalog();
  const log = createLogger({ service: "gateway" }, "error");
  const { handle, Response } = createApp({
    catalog,
    upstream: upstream(calls, answers),
    cache: memoryCache(),
    log,
    bus: localBus("dispatch"),
    serviceCredential: "credential",
    feedReachesIdentity: true,
    tokenTtlSeconds: 3600,
    limiter: rateLimiter(0, 10, undefined, "dispatch"),
    sourceLimiter: rateLimiter(0, 10, undefined, "dispatch"),
    requestsPerUser: 0,
    seatsPerService: 8,
    seatQueue: 64,
    seatWaitMs: 3_000,
    bodyLimit: 1024 * 1024,
    callTimeoutMs: 5_000,
    trustProxy: false,
    metrics: new Metrics("gateway"),
    draining: () => draining,
  });
  server = createServer({ ServerResponse: Response }, handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

beforeEach(() => {
  calls.length = 0;
  answers.clear();
  draining = false;
});

const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, {
    method,
    headers: { "x-auth-token": token(), ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe("what reaches the service", () => {
  it("an item GET calls its RPC with the path's variable and the caller's own token, and answers the item with its media type and tag", async () => {
    answers.set("GetBridge", () => ({ id: ID, name: "blue", adminStateUp: true }));
    const caller = token();
    const r = await send("GET", `/bridges/${ID}`, undefined, { "x-auth-token": caller });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/vnd.org.service.Bridge");
    expect(r.headers.get("etag")).toMatch(/^"/);
    expect(await r.json()).toMatchObject({ id: ID, name: "blue" });
    expect(calls).toEqual([expect.objectContaining({ rpc: "GetBridge", request: { id: ID } })]);
    expect(calls[0]!.token).toBe(caller);
  });

  it("a POST sends the body as the create request's message and answers 201 with the new item's Location", async () => {
    answers.set("CreateBridge", () => ({ id: ID, name: "green" }));
    const r = await send("POST", "/bridges", { name: "green", adminStateUp: false });
    expect(r.status).toBe(201);
    expect(r.headers.get("location")).toBe(`${base}/bridges/${ID}`);
    expect(calls).toEqual([expect.objectContaining({ rpc: "CreateBridge", request: { bridge: { name: "green", adminStateUp: false } } })]);
  });

  it("a list's filter travels to the service as metadata, typed by its field", async () => {
    answers.set("ListBridges", () => ({ items: [] }));
    const r = await send("GET", "/bridges?name=blue&adminStateUp=false");
    expect(r.status).toBe(200);
    expect(calls).toHaveLength(1);
    expect(JSON.parse(calls[0]!.extra?.[FILTER_KEY] ?? "{}")).toEqual({ name: "blue", adminStateUp: false });
  });
});

describe("what is refused before any service is called", () => {
  it("no token: 401 with WWW-Authenticate", async () => {
    const r = await fetch(`${base}/bridges`);
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBeTruthy();
    expect(calls).toEqual([]);
  });

  it("a query parameter the route does not know: 400 naming it", async () => {
    const r = await send("GET", "/bridges?nmae=blue");
    expect(r.status).toBe(400);
    expect(((await r.json()) as { violations: { property: string }[] }).violations.map((v) => v.property)).toEqual(["nmae"]);
    expect(calls).toEqual([]);
  });

  it("a body field of the wrong JSON type: 400 naming the field", async () => {
    const r = await send("POST", "/bridges", { name: 7 });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { violations: { property: string }[] }).violations.map((v) => v.property)).toContain("name");
    expect(calls).toEqual([]);
  });

  it("a body that is not JSON: 400; a media type the route does not take: 415", async () => {
    const broken = await fetch(`${base}/bridges`, { method: "POST", headers: { "x-auth-token": token(), "content-type": "application/json" }, body: "{" });
    expect(broken.status).toBe(400);
    const xml = await fetch(`${base}/bridges`, { method: "POST", headers: { "x-auth-token": token(), "content-type": "application/xml" }, body: "<a/>" });
    expect(xml.status).toBe(415);
    expect(calls).toEqual([]);
  });
});

describe("a service's error as HTTP", () => {
  it("NOT_FOUND is a 404 and INVALID_ARGUMENT a 400 with the service's violations, in the error body", async () => {
    answers.set("GetBridge", () => {
      throw ApiError.notFound(`There is no Bridge with ID ${MISSING}.`);
    });
    const missing = await send("GET", `/bridges/${MISSING}`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 404, message: `There is no Bridge with ID ${MISSING}.` });
    answers.set("CreateBridge", () => {
      throw ApiError.invalid([{ property: "name", message: "is taken" }]);
    });
    const invalid = await send("POST", "/bridges", { name: "x" });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ code: 400, violations: [{ property: "name", message: "is taken" }] });
  });

  it("an unforeseen failure is a 500 that says nothing of its cause", async () => {
    answers.set("GetBridge", () => {
      throw new Error("secret detail of a crash");
    });
    const r = await send("GET", `/bridges/${BROKEN}`);
    expect(r.status).toBe(500);
    expect(await r.text()).not.toContain("secret detail");
  });
});

describe("the edge's headers, on every way an answer is written", () => {
  /** The headers every answer carries, each once (a header written twice reads "a, a" here). */
  const expectEdge = (r: Response) => {
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    expect(r.headers.get("cache-control")).toMatch(/^[a-z-]+(, [a-z-]+)*$/);
  };

  it("an item's answer, from the service and then from the cache: the connection hint and Accept-Patch, once each", async () => {
    const item = "3f2a3c3e-8a57-4d0e-9a43-6c1f7b0e2d14";
    answers.set("GetBridge", () => ({ id: item, name: "blue", adminStateUp: true }));
    for (const from of ["service", "cache"]) {
      const r = await send("GET", `/bridges/${item}`);
      expect(r.status, from).toBe(200);
      expectEdge(r);
      expect(r.headers.get("keep-alive"), from).toBe("timeout=3");
      expect(r.headers.get("accept-patch"), from).toBe("application/merge-patch+json");
      expect(r.headers.get("connection"), from).toBe("keep-alive");
    }
    expect(calls).toHaveLength(1);
    // An error answer about the item says the same.
    answers.set("GetBridge", () => {
      throw new ApiError(5, "no such bridge");
    });
    const missing = await send("GET", `/bridges/${MISSING}`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("accept-patch")).toBe("application/merge-patch+json");
    // A collection takes no PATCH.
    answers.set("ListBridges", () => ({ items: [] }));
    expect((await send("GET", "/bridges")).headers.get("accept-patch")).toBeNull();
  });

  it("while the gateway drains, every answer closes its connection and gives no Keep-Alive hint", async () => {
    answers.set("GetBridge", () => ({ id: ID, name: "blue" }));
    draining = true;
    for (const r of [await send("GET", `/bridges/${ID}`), await send("GET", "/healthz"), await send("GET", `/bridges/${ID}`, undefined, { "x-auth-token": "junk" })]) {
      expect(r.headers.get("connection")).toBe("close");
      expect(r.headers.get("keep-alive")).toBeNull();
      expectEdge(r);
    }
  });

  it("an /events stream closes its connection when it ends, so it says so and gives no Keep-Alive hint", async () => {
    const head = await new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
      const req = request(`${base}/events`, { headers: { "x-auth-token": token(), accept: "text/event-stream" } }, (res) => {
        resolve(res.headers);
        res.destroy();
      });
      req.on("error", reject);
      req.end();
    });
    expect(head["content-type"]).toContain("text/event-stream");
    expect(head["connection"]).toBe("close");
    expect(head["keep-alive"]).toBeUndefined();
    expect(head["x-request-id"]).toBeDefined();
  });
});

describe("a request target asked again (what it comes to is worked out once and kept)", () => {
  it("two tenants reading one list target each get their own list, from the service and then from the cache", async () => {
    const lists = [[{ name: "first tenant's" }], [{ name: "second tenant's" }]];
    answers.set("ListBridges", () => ({ items: lists[calls.length - 1] }));
    const first = token("tenant_admin", "tenant-one");
    const second = token("tenant_admin", "tenant-two");
    for (let round = 0; round < 2; round++) {
      for (const [who, name] of [
        [first, "first tenant's"],
        [second, "second tenant's"],
      ] as const) {
        const r = await send("GET", "/bridges?name=shared", undefined, { "x-auth-token": who });
        expect(r.status).toBe(200);
        expect(await r.json()).toEqual([expect.objectContaining({ name })]);
      }
    }
    // One call per tenant: the second round came from each tenant's own cached copy.
    expect(calls.map((c) => c.token)).toEqual([first, second]);
  });

  it("a path that takes PUT names PATCH once in Allow, however often it is asked", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await send("POST", `/bridges/${ID}`, {});
      expect(r.status).toBe(405);
      const allow = (r.headers.get("allow") ?? "").split(", ");
      expect(allow.filter((m) => m === "PATCH")).toEqual(["PATCH"]);
      expect(allow).toContain("PUT");
    }
  });

  it("a refused query is refused each time it comes, and a good one after it still reaches the service", async () => {
    answers.set("ListBridges", () => ({ items: [] }));
    for (let i = 0; i < 2; i++) expect((await send("GET", "/bridges?colour=blue")).status).toBe(400);
    expect(calls).toEqual([]);
    expect((await send("GET", "/bridges?adminStateUp=true")).status).toBe(200);
    expect(JSON.parse(calls[0]!.extra?.[FILTER_KEY] ?? "{}")).toEqual({ adminStateUp: true });
  });

  it("past the targets kept, each target still reaches the service with its own filter", async () => {
    answers.set("ListBridges", () => ({ items: [] }));
    // More distinct targets than a gateway keeps (1,024), then the first one again.
    const names = Array.from({ length: 1100 }, (_, i) => `n${i}`);
    for (let i = 0; i < names.length; i += 50) await Promise.all(names.slice(i, i + 50).map((n) => send("GET", `/bridges?limit=5&name=${n}`)));
    calls.length = 0;
    const r = await send("GET", `/bridges?limit=5&name=${names[0]}`);
    expect(r.status).toBe(200);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.request).toMatchObject({ limit: 5 });
    expect(JSON.parse(calls[0]!.extra?.[FILTER_KEY] ?? "{}")).toEqual({ name: "n0" });
  });
});
