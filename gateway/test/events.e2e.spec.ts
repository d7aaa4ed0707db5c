// GET /events (docs/api.md, "Change feed"): the change feed as Server-Sent Events, filtered to what the
// caller may see, resumable with Last-Event-ID. Real processes, NATS JetStream underneath.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPS, expectError, freePort, httpClient, openFeed, Stack, waitFor } from "@vnm/e2e/harness";
import { TcpProxy } from "@vnm/e2e/tcp-proxy";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const open = (token: string, lastEventId?: string) => openFeed(gw, token, lastEventId);
const PASSWORD = "feed-password-1";
/** Replays the last test runs at once (each user may hold that many streams on this gateway). */
const REPLAYS = 40;

let tokenA = "";
let tokenB = "";

beforeAll(async () => {
  await stack.startServices();
  // No rate limit: the last test makes 1,000 changes as fast as it can.
  gw = await stack.startGateway({ VNM_EVENT_STREAMS_PER_USER: String(REPLAYS), VNM_RATE_LIMIT: "0" });
  for (const [who, tenant] of [
    ["a", "A"],
    ["b", "B"],
  ] as const) {
    await http("POST", "/users", { name: `${who}-${stack.id}`, password: PASSWORD, tenantId: `${tenant}-${stack.id}`, roles: ["tenant_admin"] });
  }
  tokenA = await stack.login(gw, `a-${stack.id}`, PASSWORD);
  tokenB = await stack.login(gw, `b-${stack.id}`, PASSWORD);
});

afterAll(async () => {
  await stack.stop();
});

describe("GET /events", () => {
  it("streams created, updated and deleted with a sequence id and an absolute uri", async () => {
    const feed = await open(stack.adminToken);
    expect(feed.res.status).toBe(200);
    expect(feed.res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const b = await http("POST", "/bridges", { name: "fed" });
    await http("PUT", b.json.uri, { name: "fed2" });
    await http("POST", `${b.json.uri}/dhcp`, { subnetPrefix: "10.0.0.0", subnetLength: 24 });
    await http("DELETE", b.json.uri);
    await waitFor("five events", async () => feed.events.length >= 5, 10_000);
    await feed.close();
    const mine = feed.events.filter((e) => e.data.uri.startsWith(b.json.uri));
    expect(mine.map((e) => `${e.event} ${e.data.kind}`)).toEqual([
      "created Bridge",
      "updated Bridge",
      "created DhcpSubnet",
      "deleted DhcpSubnet",
      "deleted Bridge",
    ]);
    expect(mine[0]!.data).toEqual({ kind: "Bridge", id: b.json.id, uri: b.json.uri });
    const ids = mine.map((e) => Number(e.id));
    expect(ids.every((n, i) => Number.isInteger(n) && (i === 0 || n > ids[i - 1]!))).toBe(true);
  });

  it("a change made as soon as the stream's headers arrive is on it, however slow the bus is to answer", async () => {
    // This gateway reaches NATS through a proxy that holds its bytes for a while: the stream's
    // consumer is made late. The bridge service publishes straight to NATS meanwhile.
    const proxy = new TcpProxy(await freePort(), DEPS.natsUrl);
    await proxy.open();
    try {
      const slow = await stack.startGateway({ NATS_URL: `nats://127.0.0.1:${proxy.port}` });
      proxy.stall();
      const opening = openFeed(slow, stack.adminToken).then(async (feed) => {
        // The client writes the moment it has the headers.
        const made = await http("POST", "/bridges", { name: "at-once" });
        expect(made.status).toBe(201);
        return { feed, id: made.json.id as string };
      });
      await new Promise((r) => setTimeout(r, 500));
      proxy.resume();
      const { feed, id } = await opening;
      await waitFor("the bridge's creation on the stream", async () => feed.events.some((e) => e.data.id === id), 10_000);
      await feed.close();
    } finally {
      await proxy.cut();
    }
  });

  it("shows a tenant only its own tenant's changes, and no admin-only kinds", async () => {
    const a = await open(tokenA);
    const b = await open(tokenB);
    const ofA = await http("POST", "/bridges", { name: "a's", tenantId: `A-${stack.id}` }, { "x-auth-token": tokenA });
    const ofB = await http("POST", "/bridges", { name: "b's", tenantId: `B-${stack.id}` }, { "x-auth-token": tokenB });
    await http("POST", "/load_balancers", {});
    await http("POST", "/users", { name: `c-${stack.id}`, password: PASSWORD, tenantId: `A-${stack.id}`, roles: ["tenant_user"] });
    await waitFor("each tenant's event", async () => a.events.length >= 1 && b.events.length >= 1, 10_000);
    await new Promise((r) => setTimeout(r, 500));
    await a.close();
    await b.close();
    expect(a.events.map((e) => e.data.id)).toEqual([ofA.json.id]);
    expect(b.events.map((e) => e.data.id)).toEqual([ofB.json.id]);
  });

  it("resumes after Last-Event-ID", async () => {
    const first = await open(stack.adminToken);
    const one = await http("POST", "/bridges", { name: "one" });
    await waitFor("one", async () => first.events.some((e) => e.data.id === one.json.id), 10_000);
    await first.close();
    const last = first.events.find((e) => e.data.id === one.json.id)!.id;
    // Missed while disconnected:
    const two = await http("POST", "/bridges", { name: "two" });
    const three = await http("POST", "/bridges", { name: "three" });
    const again = await open(stack.adminToken, last);
    await waitFor("the missed events", async () => again.events.length >= 2, 10_000);
    await again.close();
    expect(again.events.slice(0, 2).map((e) => e.data.id)).toEqual([two.json.id, three.json.id]);
  });

  it("needs a token; a malformed Last-Event-ID is a 400, one it never gave a 410; only GET", async () => {
    expectError(await http("GET", "/events", undefined, { "x-auth-token": "" }), 401);
    expectError(await http("GET", "/events", undefined, { "last-event-id": "yesterday" }), 400);
    // An id the feed never gave is a 410 (list again), not a silent wait.
    const beyond = await http("GET", "/events", undefined, { "last-event-id": String(Number.MAX_SAFE_INTEGER) });
    expectError(beyond, 410);
    expect(beyond.json.message).toMatch(/never given by this feed/);
    expectError(await http("POST", "/events", "{}"), 405);
    expect((await http("HEAD", "/events")).status).toBe(405);
  });

  it("answers a health probe while 40 clients replay the feed from its start", { timeout: 120_000 }, async () => {
    // Enough events that no replay fits in the sockets' buffers at once.
    const created = new Set<string>();
    const worker = async () => {
      while (created.size < 1_000) {
        const r = await http("POST", "/bridges", { name: `replayed-${created.size}` });
        expect(r.status).toBe(201);
        created.add(r.json.id);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    const whole = await open(stack.adminToken, "0");
    await waitFor("the whole feed", async () => whole.events.filter((e) => e.event === "created" && created.has(e.data.id)).length >= created.size, 60_000);
    await whole.close();
    const total = whole.events.length;

    const replays = await Promise.all(Array.from({ length: REPLAYS }, () => open(stack.adminToken, "0")));
    await waitFor("every replay under way", async () => replays.every((r) => r.events.length > 0), 30_000);
    const probe = await fetch(`${gw}/healthz`);
    const atProbe = replays.map((r) => r.events.length);
    expect(probe.status).toBe(200);
    // Answered before any replay had been written to its end.
    expect(atProbe.filter((n) => n < total)).toHaveLength(REPLAYS);
    await waitFor("every replay complete", async () => replays.every((r) => r.events.length >= total), 60_000);
    await Promise.all(replays.map((r) => r.close()));
  });
});
