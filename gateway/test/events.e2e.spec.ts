import { randomUUID } from "node:crypto";
// GET /events (docs/api.md, "Change feed"): the change feed as Server-Sent Events, filtered to what the
// caller may see, resumable with Last-Event-ID. Real processes, NATS JetStream underneath.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPS, expectError, freePort, httpClient, openFeed, Stack, waitFor } from "@vnm/e2e/harness";
import { TcpProxy } from "@vnm/e2e/tcp-proxy";
import { StringCodec } from "nats";

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

/** A feed read as the bytes it sends: `text()` is everything so far. */
async function rawFeed(token: string) {
  const ac = new AbortController();
  const headers: Record<string, string> = { "x-auth-token": token, accept: "text/event-stream" };
  const res = await fetch(`${gw}/events`, { headers, signal: ac.signal });
  expect(res.status).toBe(200);
  let text = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
  })().catch(() => {});
  return {
    text: () => text,
    close: async () => {
      ac.abort();
      await reading;
    },
  };
}

/** The value of a sample of the gateway's /metrics (name and labels as written); 0 when absent. */
async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${gw}/metrics`)).text();
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return 0;
}

/** Publishes a message on this stack's bus as a part could (the NATS admin can publish anywhere). */
async function publish(subject: string, body: unknown): Promise<void> {
  const nc = await stack.natsAdmin();
  try {
    await nc.jetstream().publish(`${stack.prefix}.${subject}`, StringCodec().encode(JSON.stringify(body)));
  } finally {
    await nc.close();
  }
}

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

  it("a resume while JetStream does not answer is a 503 the client may retry, then works", async () => {
    // The bus connection stays open (no ping has failed yet) but nothing comes back: what a
    // client resuming with Last-Event-ID meets while a NATS cluster elects a leader.
    const proxy = new TcpProxy(await freePort(), DEPS.natsUrl);
    await proxy.open();
    try {
      const slow = await stack.startGateway({ NATS_URL: `nats://127.0.0.1:${proxy.port}` });
      const viaSlow = httpClient(() => slow, "application/json", () => stack.adminToken);
      proxy.stall();
      const stalled = await viaSlow("GET", "/events", undefined, { "last-event-id": "0" });
      expectError(stalled, 503);
      expect(stalled.json.message).toMatch(/change feed is unavailable/);
      proxy.resume();
      const ac = new AbortController();
      const again = await fetch(`${slow}/events`, { headers: { "x-auth-token": stack.adminToken, accept: "text/event-stream", "last-event-id": "0" }, signal: ac.signal });
      expect(again.status).toBe(200);
      ac.abort();
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

  it("believes a message's subject, not its body: forged events reach no one, the stream stays well-formed, the drops are counted", async () => {
    // The feeds open first, so the creation is on them too (opened after it, they might or might not
    // hear it, by when its message comes in).
    const a = await rawFeed(tokenA);
    const admin = await rawFeed(stack.adminToken);
    const real = await http("POST", "/bridges", { name: "real", tenantId: `A-${stack.id}` }, { "x-auth-token": tokenA });
    const id = real.json.id as string;
    const before = { body: await metric("vnm_events_dropped_total", { reason: "body" }), path: await metric("vnm_events_dropped_total", { reason: "path" }) };
    const lie = { domain: "bridge", kind: "Bridge", id, path: `/bridges/${id}`, tenantId: `A-${stack.id}`, at: new Date().toISOString() };
    // A part allowed only vnm.tunnel.> announces a bridge deletion that never happened.
    await publish("tunnel.Vtep.deleted", { ...lie, event: "deleted" });
    // An event with a newline: a whole second event, with any URI, on the stream.
    const injected = `updated\nid: 1\ndata: {"kind":"Bridge","id":"${id}","uri":"http://evil.example/"}\n\nevent: deleted`;
    await publish("bridge.Bridge.updated", { ...lie, event: injected });
    // A path that takes the URI to another host.
    await publish("bridge.Bridge.updated", { ...lie, event: "updated", id: "x", path: "@evil.example/x" });
    // Then a real change: once it is on the streams, the forged ones before it were read.
    expect((await http("PUT", real.json.uri, { name: "renamed" }, { "x-auth-token": tokenA })).status).toBe(200);
    await waitFor("the real update", async () => a.text().includes("event: updated") && admin.text().includes("event: updated"), 10_000);
    await a.close();
    await admin.close();
    for (const text of [a.text(), admin.text()]) {
      expect(text).not.toContain("evil.example");
      expect(text).not.toContain("deleted");
      // Every block is the retry hint, a keepalive or one event of the closed set with an id and JSON data.
      const blocks = text.split("\n\n").filter((b) => b !== "");
      for (const b of blocks) expect(b).toMatch(/^(retry: \d+|: keepalive|event: (created|updated|deleted)\nid: [A-Za-z0-9_-]+\ndata: \{[^\n]*\})$/);
      const events = blocks.filter((b) => b.startsWith("event:"));
      expect(events.map((e) => e.split("\n")[0])).toEqual(["event: created", "event: updated"]);
      for (const e of events) expect(JSON.parse(e.split("\ndata: ")[1]!)).toEqual({ kind: "Bridge", id, uri: real.json.uri });
    }
    // Each forged message counted once by the gateway, however many streams heard it.
    expect((await metric("vnm_events_dropped_total", { reason: "body" })) - before.body).toBe(2);
    expect((await metric("vnm_events_dropped_total", { reason: "path" })) - before.path).toBe(1);
  });

  it("a tenant's ids and 410s tell nothing of other tenants' changes, and its resume skips and repeats none of its own", async () => {
    const asA = { "x-auth-token": tokenA };
    const asB = { "x-auth-token": tokenB };
    const b = await open(tokenB);
    const a = await open(tokenA);
    const b1 = await http("POST", "/bridges", { name: "b1", tenantId: `B-${stack.id}` }, asB);
    await waitFor("b1", async () => b.events.some((e) => e.data.id === b1.json.id), 10_000);
    // Tenant A writes between B's two changes.
    for (let i = 0; i < 5; i++) expect((await http("POST", "/bridges", { name: `a${i}`, tenantId: `A-${stack.id}` }, asA)).status).toBe(201);
    const b2 = await http("POST", "/bridges", { name: "b2", tenantId: `B-${stack.id}` }, asB);
    await waitFor("b2", async () => b.events.some((e) => e.data.id === b2.json.id), 10_000);
    await waitFor("A's five", async () => a.events.length >= 5, 10_000);
    await b.close();
    await a.close();
    const [e1, e2] = b.events;
    expect(b.events.map((e) => e.data.id)).toEqual([b1.json.id, b2.json.id]);
    // Not sequence numbers, whose difference (6) would count A's writes between them.
    for (const e of [e1!, e2!, ...a.events]) expect(e.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set([e1!.id, e2!.id, ...a.events.map((e) => e.id)]).size).toBe(7);

    // Resumed after b1: b2, then B's next change, each once; none of A's.
    const again = await open(tokenB, e1!.id);
    await waitFor("b2 replayed", async () => again.events.length >= 1, 10_000);
    for (let i = 0; i < 3; i++) await http("POST", "/bridges", { name: `a-more${i}`, tenantId: `A-${stack.id}` }, asA);
    const b3 = await http("POST", "/bridges", { name: "b3", tenantId: `B-${stack.id}` }, asB);
    await waitFor("b3", async () => again.events.some((e) => e.data.id === b3.json.id), 10_000);
    await new Promise((r) => setTimeout(r, 300));
    await again.close();
    expect(again.events.map((e) => e.data.id)).toEqual([b2.json.id, b3.json.id]);
    expect(again.events[0]!.id).toBe(e2!.id);

    // Another tenant's id, numbers (one beyond the newest event, one among them), a made-up id: a 410 naming no number.
    for (const id of [a.events[0]!.id, String(Number.MAX_SAFE_INTEGER), "9", "AAAAAAAAAAAAAAAAAAAAAA"]) {
      const r = await http("GET", "/events", undefined, { ...asB, "last-event-id": id });
      expectError(r, 410);
      expect(r.json.message).not.toMatch(/\d/);
    }
    expectError(await http("GET", "/events", undefined, { ...asB, "last-event-id": "yesterday" }), 400);
  });

  it("answers a health probe while 40 clients replay the feed from its start", { timeout: 120_000 }, async () => {
    // Enough changes that 40 replays of them take seconds, and more than the gateway keeps in
    // memory (8,192), so each replay has a consumer of its own: published to the bus as the
    // services announce them (faster than writes through the API). This process reads the 40
    // streams itself and handles the probe's answer between their chunks: with 5,000 changes,
    // on a quiet CI machine, 31 replays had ended by the time it got to the answer.
    const CHANGES = 12_000;
    const nc = await stack.natsAdmin();
    try {
      const js = nc.jetstream();
      const sc = StringCodec();
      await Promise.all(
        Array.from({ length: CHANGES }, () => {
          const id = randomUUID();
          const body = { domain: "bridge", kind: "Bridge", event: "created", id, path: `/bridges/${id}`, tenantId: null, at: new Date().toISOString() };
          return js.publish(`${stack.prefix}.bridge.Bridge.created`, sc.encode(JSON.stringify(body)));
        }),
      );
    } finally {
      await nc.close();
    }
    const whole = await open(stack.adminToken, "0");
    await waitFor("the whole feed", async () => whole.events.length >= CHANGES, 60_000);
    await whole.close();
    const total = whole.events.length;

    const replays = await Promise.all(Array.from({ length: REPLAYS }, () => open(stack.adminToken, "0")));
    await waitFor("every replay under way", async () => replays.every((r) => r.events.length > 0), 30_000);
    const probe = await fetch(`${gw}/healthz`);
    const atProbe = replays.map((r) => r.events.length);
    expect(probe.status).toBe(200);
    // Answered while the replays were being written: not one had reached its end.
    expect(atProbe.filter((n) => n < total)).toHaveLength(REPLAYS);
    await waitFor("every replay complete", async () => replays.every((r) => r.events.length >= total), 60_000);
    // In order, each event once.
    for (const r of replays) expect(r.events.map((e) => e.id)).toEqual(whole.events.map((e) => e.id));
    await Promise.all(replays.map((r) => r.close()));
  });
});
