// Tokens that can be taken back. A password change, a role change, a user's deletion
// or a logout everywhere ends the user's tokens on every gateway within a second, and closes
// their open /events streams; a logout ends the one token, and the user's other sessions go on; a stream ends when its token expires; a user has a bounded number of open
// streams; a token's signature has one spelling only. Every service checks the same: signature
// by identity's published keys, audience, expiry and generation; identity limits password
// guessing at its own port; a rotated key's tokens stay valid until they expire. The identity
// and bridge services run, behind two gateways.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUpstream, loadGrpc } from "@vnm/kit";
import { expectError, httpClient, Stack, waitFor } from "@vnm/e2e/harness";

const stack = new Stack();
let gws: string[] = [];
const http = httpClient(() => gws[0]!, "application/json", () => stack.adminToken);
const PASSWORD = "a long enough password 1";
const as = (token: string) => ({ "x-auth-token": token });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A new tenant user, logged in at the first gateway. */
async function newUser(): Promise<{ id: string; uri: string; body: Record<string, unknown>; token: string }> {
  const body = { name: `u-${randomBytes(4).toString("hex")}`, password: PASSWORD, tenantId: "T", roles: ["tenant_admin"] };
  const r = await http("POST", "/users", body);
  expect(r.status).toBe(201);
  return { id: r.json.id, uri: r.json.uri, body, token: await stack.login(gws[0]!, body.name, PASSWORD) };
}

/** Opens /events with a token; `ended(ms)` tells whether the server closes it within ms. */
async function openEvents(base: string, token: string) {
  const res = await fetch(`${base}/events`, { headers: { accept: "text/event-stream", ...as(token) } });
  const reader = res.status === 200 ? res.body!.getReader() : undefined;
  return {
    res,
    async ended(ms: number): Promise<boolean> {
      const until = Date.now() + ms;
      for (;;) {
        const left = until - Date.now();
        if (left <= 0) return false;
        const r = await Promise.race([reader!.read(), sleep(left).then(() => "timeout" as const)]);
        if (r === "timeout") return false;
        if (r.done) return true;
      }
    },
    cancel: () => reader?.cancel().catch(() => {}),
  };
}

/** Every gateway refuses the token with 401 within a second of the change. */
async function refusedEverywhereWithinASecond(token: string): Promise<void> {
  const since = Date.now();
  for (const base of gws) {
    let status = 0;
    while (Date.now() - since <= 1_000) {
      status = (await http("GET", `${base}/`, undefined, as(token))).status;
      if (status === 401) break;
      await sleep(25);
    }
    expect(status, `${base} still accepts the token ${Date.now() - since} ms after the change`).toBe(401);
  }
}

beforeAll(async () => {
  await stack.startServices("identity", "bridge");
  gws = [await stack.startGateway({}, false), await stack.startGateway({}, false)];
});

afterAll(async () => {
  await stack.stop();
});

describe("revoked tokens", () => {
  it.each([
    ["a password change", (u: Awaited<ReturnType<typeof newUser>>) => http("PUT", u.uri, { ...u.body, password: "another long password 2" })],
    ["a role change", (u: Awaited<ReturnType<typeof newUser>>) => http("PUT", u.uri, { ...u.body, roles: ["tenant_user"] })],
    ["the user's deletion", (u: Awaited<ReturnType<typeof newUser>>) => http("DELETE", u.uri)],
    ["a logout", (u: Awaited<ReturnType<typeof newUser>>) => http("POST", `${gws[1]}/logout`, undefined, as(u.token))],
    ["a logout everywhere", (u: Awaited<ReturnType<typeof newUser>>) => http("POST", `${gws[1]}/logout/all`, undefined, as(u.token))],
  ])("after %s, get 401 on every gateway within a second, and the open stream closes", async (_what, change) => {
    const u = await newUser();
    for (const base of gws) expect((await http("GET", `${base}/`, undefined, as(u.token))).status).toBe(200);
    const stream = await openEvents(gws[1]!, u.token);
    expect(stream.res.status).toBe(200);
    const r = await change(u);
    expect(r.status).toBeLessThan(300);
    await refusedEverywhereWithinASecond(u.token);
    expect(await stream.ended(1_000)).toBe(true);
  });

  it("logout ends this token only: the user's other session goes on, at the gateways and at a service; /logout/all ends every one", async () => {
    const u = await newUser();
    // The same user in another tab, or the CLI: another login, its own stream.
    const other = await stack.login(gws[1]!, String(u.body.name), PASSWORD);
    const stream = await openEvents(gws[1]!, other);
    expect(stream.res.status).toBe(200);
    expect((await http("POST", `${gws[0]}/logout`, undefined, as(u.token))).status).toBe(204);
    await refusedEverywhereWithinASecond(u.token);
    expect((await grpcAt("bridge", BRIDGES, "ListBridges", {}, u.token)).code).toBe(grpc.status.UNAUTHENTICATED);
    expectError(await http("POST", `${gws[0]}/logout`, undefined, as(u.token)), 401);
    for (const base of gws) expect((await http("GET", `${base}/`, undefined, as(other))).status).toBe(200);
    expect((await grpcAt("bridge", BRIDGES, "ListBridges", {}, other)).code).toBe(0);
    expect(await stream.ended(1_000)).toBe(false);
    // Logging out everywhere ends every token of the user, from any one of them; a new login works.
    const third = await stack.login(gws[0]!, String(u.body.name), PASSWORD);
    expect((await http("POST", `${gws[1]}/logout/all`, undefined, as(other))).status).toBe(204);
    await refusedEverywhereWithinASecond(third);
    await refusedEverywhereWithinASecond(other);
    expect(await stream.ended(1_000)).toBe(true);
    const fresh = await stack.login(gws[0]!, String(u.body.name), PASSWORD);
    for (const base of gws) expect((await http("GET", `${base}/`, undefined, as(fresh))).status).toBe(200);
  });

  it("a deleted user's token stays refused when a user is made again under its id, in another tenant and role", async () => {
    const u = await newUser();
    // A password change first: the old user's generation is past a new user's first one.
    expect((await http("PUT", u.uri, { ...u.body, password: "another long password 2" })).status).toBe(200);
    const token = await stack.login(gws[0]!, String(u.body.name), "another long password 2");
    expect((await http("DELETE", u.uri)).status).toBe(204);
    await refusedEverywhereWithinASecond(token);
    const again = await http("POST", "/users", { id: u.id, name: `again-${randomBytes(4).toString("hex")}`, password: PASSWORD, tenantId: "other", roles: ["tenant_user"] });
    expect(again.status).toBe(201);
    await sleep(200);
    for (const base of gws) expectError(await http("GET", `${base}/`, undefined, as(token)), 401);
  });

  it("the last administrator cannot give up the admin role (409); with another one it can", async () => {
    const admins = (await http("GET", "/users")).json.filter((x: { roles: string[] }) => x.roles.includes("admin"));
    expect(admins).toHaveLength(1);
    const me = admins[0] as { uri: string; name: string; roles: string[]; tenantId: string | null };
    const demoted = { name: me.name, roles: ["tenant_user"], tenantId: "T" };
    const refused = await http("PUT", me.uri, demoted);
    expectError(refused, 409);
    expect(refused.json.message).toContain("last administrator");
    const other = await http("POST", "/users", { name: `admin-${randomBytes(4).toString("hex")}`, password: PASSWORD, roles: ["admin"] });
    expect(other.status).toBe(201);
    const otherToken = await stack.login(gws[0]!, other.json.name, PASSWORD);
    const second = await http("PUT", other.json.uri, { name: other.json.name, roles: ["tenant_user"], tenantId: "T" }, as(otherToken));
    expect(second.status).toBe(200);
    expectError(await http("PUT", me.uri, demoted), 409);
  });

  it("a token whose signature is spelled another way is refused", async () => {
    const u = await newUser();
    const [h, p, s] = u.token.split(".") as [string, string, string];
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // The last character of a 32-byte signature carries two spare bits: same bytes, other string.
    const respelled = `${h}.${p}.${s.slice(0, -1)}${alphabet[alphabet.indexOf(s.at(-1)!) ^ 1]}`;
    expect(Buffer.from(respelled.split(".")[2]!, "base64url").equals(Buffer.from(s, "base64url"))).toBe(true);
    for (const t of [respelled, `${u.token}=`, `${h}.${p}.${s}AA`]) {
      const r = await http("GET", `${gws[0]}/`, undefined, as(t));
      expectError(r, 401);
    }
    expect((await http("GET", `${gws[0]}/`, undefined, as(u.token))).status).toBe(200);
  });
});

/** Calls an RPC at a service's own gRPC port with a token (or none): its answer, or its status code. */
async function grpcAt(domain: string, service: string, rpc: string, request: Record<string, unknown>, token?: string): Promise<{ code: number; response?: Record<string, unknown> }> {
  const up = createUpstream(loadGrpc(), [{ name: service, domain }], () => stack.addrs.get(domain));
  try {
    return { code: 0, response: (await up.call(service, rpc, request, 5_000, token)).response };
  } catch (err) {
    return { code: (err as { code: number }).code };
  } finally {
    up.close();
  }
}

const AUTH = "vnm.identity.v1.AuthService";
const BRIDGES = "vnm.bridge.v1.BridgeService";
const header = (token: string) => JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()) as { alg: string; kid?: string };

/** Tokens for the user of `real` signed some other way: an old-style HS256 secret, a fresh Ed25519 key under the real kid, alg none. */
async function forgeries(real: string): Promise<[string, string][]> {
  const claims = JSON.parse(Buffer.from(real.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
  const kid = header(real).kid!;
  const hs = await new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT", kid }).sign(new TextEncoder().encode(randomBytes(24).toString("hex")));
  const { privateKey } = generateKeyPairSync("ed25519");
  const ed = await new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", typ: "JWT", kid }).sign(privateKey);
  const none = `${new UnsecuredJWT(claims).encode()}`;
  return [
    ["HS256 with a shared secret", hs],
    ["a fresh Ed25519 key", ed],
    ["alg none", none],
  ];
}

describe("tokens at every hop", () => {
  it("a logged-out user's token is refused on a service's own gRPC port within a second", async () => {
    const u = await newUser();
    expect((await grpcAt("bridge", BRIDGES, "ListBridges", {}, u.token)).code).toBe(0);
    expect((await http("POST", `${gws[0]}/logout`, undefined, as(u.token))).status).toBe(204);
    const since = Date.now();
    let code = 0;
    while (Date.now() - since <= 1_000 && code !== grpc.status.UNAUTHENTICATED) code = (await grpcAt("bridge", BRIDGES, "ListBridges", {}, u.token)).code;
    expect(code, `bridge still accepts the token ${Date.now() - since} ms after the logout`).toBe(grpc.status.UNAUTHENTICATED);
  });

  it("Authenticate at identity's own port grants no longer a life than the configured one (an hour), and refuses a life of 0", async () => {
    const u = await newUser();
    // The life the token itself states (exp - iat), and an iat of the call's own seconds: no
    // clock of this test's is read against identity's to the second.
    const life = async (ttlSeconds: number) => {
      const before = Math.floor(Date.now() / 1000);
      const r = await grpcAt("identity", AUTH, "Authenticate", { name: u.body.name, password: PASSWORD, ttlSeconds });
      const after = Math.ceil(Date.now() / 1000);
      expect(r.code).toBe(0);
      const claims = JSON.parse(Buffer.from(String(r.response?.["token"]).split(".")[1]!, "base64url").toString()) as { exp: number; iat: number };
      expect(claims.exp).toBe(Number(r.response?.["expires"]));
      expect(claims.iat).toBeGreaterThanOrEqual(before - 1);
      expect(claims.iat).toBeLessThanOrEqual(after + 1);
      return claims.exp - claims.iat;
    };
    for (const asked of [86_400, 3_601, 4_294_967_295]) expect(await life(asked), `asked for ${asked} s`).toBe(3_600);
    expect(await life(60)).toBe(60);
    expect((await grpcAt("identity", AUTH, "Authenticate", { name: u.body.name, password: PASSWORD, ttlSeconds: 0 })).code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("a token signed any other way is refused at the gateway and at a service", async () => {
    const u = await newUser();
    for (const [what, forged] of await forgeries(u.token)) {
      expectError(await http("GET", `${gws[0]}/`, undefined, as(forged)), 401);
      expect((await grpcAt("bridge", BRIDGES, "ListBridges", {}, forged)).code, what).toBe(grpc.status.UNAUTHENTICATED);
    }
    expect((await grpcAt("bridge", BRIDGES, "ListBridges", {}, u.token)).code).toBe(0);
  });

  it("a service token works where its part is a caller, nowhere else, and is refused at the public gateway", async () => {
    const issued = await grpcAt("identity", AUTH, "IssueServiceToken", { name: "gateway", credential: stack.credentials.credentials.get("gateway") });
    const token = String(issued.response?.["token"]);
    expect(JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString())).toMatchObject({ aud: "vnm-internal", sub: "service:gateway" });
    // The gateway asks identity for users' token generations as itself; it reads bridges only with its callers' tokens.
    const u = await newUser();
    expect((await grpcAt("identity", AUTH, "GetTokenGeneration", { id: u.id }, token)).code).toBe(0);
    expect((await grpcAt("bridge", BRIDGES, "ListBridges", {}, token)).code).toBe(grpc.status.PERMISSION_DENIED);
    expect((await grpcAt("bridge", BRIDGES, "ListBridges", {}, u.token)).code).toBe(0);
    for (const base of gws) expectError(await http("GET", `${base}/`, undefined, as(token)), 401);
    // A part may not rotate the signing key: only an administrator (a user) may.
    expect((await grpcAt("identity", AUTH, "RotateSigningKey", {}, token)).code).toBe(grpc.status.PERMISSION_DENIED);
    const wrong = await grpcAt("identity", AUTH, "IssueServiceToken", { name: "gateway", credential: "guess" });
    expect(wrong.code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it("30 wrong passwords straight to identity's gRPC port are limited, and then the right one is refused too", async () => {
    const u = await newUser();
    const codes: number[] = [];
    for (let i = 0; i < 30; i++) codes.push((await grpcAt("identity", AUTH, "Authenticate", { name: u.body.name, password: `wrong ${i}` })).code);
    expect(codes.filter((c) => c === grpc.status.UNAUTHENTICATED).length).toBeLessThanOrEqual(10);
    expect(codes.filter((c) => c === grpc.status.RESOURCE_EXHAUSTED).length).toBeGreaterThanOrEqual(20);
    expect((await grpcAt("identity", AUTH, "Authenticate", { name: u.body.name, password: PASSWORD })).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // One count, whoever asks: from the same address (loopback here), the gateway answers 429 with Retry-After.
    const basic = `Basic ${Buffer.from(`${u.body.name}:${PASSWORD}`).toString("base64")}`;
    const r = await http("POST", `${gws[0]}/login`, undefined, { authorization: basic });
    expectError(r, 429);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("after a key rotation, new tokens carry the new key and tokens of the old one stay valid until they expire", async () => {
    const u = await newUser();
    const rotated = await grpcAt("identity", AUTH, "RotateSigningKey", {}, stack.adminToken);
    expect(rotated.code).toBe(0);
    const kids = ((rotated.response?.["keys"] ?? []) as { kid: string }[]).map((k) => k.kid);
    expect(kids).toContain(header(u.token).kid);
    // The new key is published at once and signs a little later, once every part can have it.
    let fresh = "";
    await waitFor("a token signed with the new key", async () => {
      fresh = await stack.login(gws[0]!, String(u.body.name), PASSWORD);
      return header(fresh).kid !== header(u.token).kid;
    }, 30_000);
    expect(header(fresh)).toMatchObject({ alg: "EdDSA" });
    expect(kids).toContain(header(fresh).kid);
    for (const t of [u.token, fresh]) {
      for (const base of gws) expect((await http("GET", `${base}/`, undefined, as(t))).status).toBe(200);
      expect((await grpcAt("bridge", BRIDGES, "ListBridges", {}, t)).code).toBe(0);
    }
  });
});

describe("without a shared bus (NATS_URL unset: each process has its own stand-in)", () => {
  const alone = new Stack({ NATS_URL: "" });
  let gw = "";
  beforeAll(async () => {
    await alone.startServices("identity", "bridge");
    gw = await alone.startGateway({}, false);
  });
  afterAll(async () => {
    await alone.stop();
  });

  it("a logged-out token is still refused at the gateway and on a service's port, within the one-second trust of a generation", async () => {
    const own = httpClient(() => gw, "application/json", () => alone.adminToken);
    const body = { name: `u-${randomBytes(4).toString("hex")}`, password: PASSWORD, tenantId: "T", roles: ["tenant_admin"] };
    expect((await own("POST", "/users", body)).status).toBe(201);
    const token = await alone.login(gw, body.name, PASSWORD);
    const bridgeUp = createUpstream(loadGrpc(), [{ name: BRIDGES, domain: "bridge" }], () => alone.addrs.get("bridge"));
    const atBridge = () => bridgeUp.call(BRIDGES, "ListBridges", {}, 5_000, token).then(() => 0, (err: { code: number }) => err.code);
    try {
      expect(await atBridge()).toBe(0);
      expect((await own("POST", "/logout", undefined, as(token))).status).toBe(204);
      const since = Date.now();
      let code = 0;
      while (Date.now() - since <= 1_500 && code !== grpc.status.UNAUTHENTICATED) code = await atBridge();
      expect(code, `bridge still accepts the token ${Date.now() - since} ms after the logout`).toBe(grpc.status.UNAUTHENTICATED);
      expectError(await own("GET", "/", undefined, as(token)), 401);
    } finally {
      bridgeUp.close();
    }
  });
});

describe("/events streams", () => {
  it("a stream closes when its token expires", async () => {
    const short = await stack.startGateway({ VNM_TOKEN_TTL_SECONDS: "2" }, false);
    const u = await newUser();
    const token = await stack.login(short, String(u.body.name), PASSWORD);
    const stream = await openEvents(short, token);
    expect(stream.res.status).toBe(200);
    expect(await stream.ended(4_000)).toBe(true);
  });

  it("the (N+1)th open stream of a user is a 429; closing one makes room", async () => {
    const limited = await stack.startGateway({ VNM_EVENT_STREAMS_PER_USER: "2" }, false);
    const u = await newUser();
    const open = [await openEvents(limited, u.token), await openEvents(limited, u.token)];
    for (const s of open) expect(s.res.status).toBe(200);
    const third = await fetch(`${limited}/events`, { headers: { accept: "text/event-stream", ...as(u.token) } });
    const text = await third.text();
    expectError({ status: third.status, headers: third.headers, text, json: JSON.parse(text) }, 429);
    // Another user is not affected.
    const other = await newUser();
    const theirs = await openEvents(limited, other.token);
    expect(theirs.res.status).toBe(200);
    await open[0]!.cancel();
    let status = 0;
    for (let i = 0; i < 20 && status !== 200; i++) {
      await sleep(100);
      const s = await openEvents(limited, u.token);
      status = s.res.status;
      if (status === 200) await s.cancel();
      else await s.res.text();
    }
    expect(status).toBe(200);
    await open[1]!.cancel();
    await theirs.cancel();
  });
});
