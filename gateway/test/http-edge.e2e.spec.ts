// HTTP a client gets wrong still gets the error body: a body longer than its Content-Length, a
// malformed request line, a request too slow to arrive (here 1 s). And answers say how they may
// be cached: not at all, but for an item's ETag revalidation.
import { request } from "node:http";
import { connect } from "node:net";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { ERROR_TYPE, httpClient, useStack, waitFor } from "@vnm/e2e/harness";

const fx = useStack({ VNM_REQUEST_TIMEOUT_MS: "1000" });
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);

/** Writes raw bytes to the gateway and reads until it closes the connection. */
function raw(text: string, keepOpenMs = 0): Promise<string> {
  const { hostname, port } = new URL(fx.gw);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let out = "";
    socket.on("data", (d) => {
      out += d.toString();
    });
    socket.on("close", () => resolve(out));
    socket.on("error", reject);
    socket.write(text);
    if (keepOpenMs === 0) socket.end();
  });
}

/** The last response in a raw answer: status and JSON body. */
function last(answer: string): { status: number; type: string; body: Record<string, unknown> } {
  const at = answer.lastIndexOf("HTTP/1.1 ");
  const [head, body] = answer.slice(at).split("\r\n\r\n");
  return {
    status: Number(head!.split(" ")[1]),
    type: /content-type: ([^\r\n]+)/i.exec(head!)?.[1] ?? "",
    body: JSON.parse(body!),
  };
}

describe("malformed HTTP", () => {
  it("a body longer than its Content-Length: the rest is a bad request, answered with the error body", async () => {
    const r = last(await raw(`POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}{"name":"extra"}\r\n\r\n`));
    expect(r.status).toBe(400);
    expect(r.type).toBe(ERROR_TYPE);
    expect(r.body).toMatchObject({ code: 400, message: "The request is not valid HTTP" });
    expect(typeof r.body["requestId"]).toBe("string");
  });

  it("a malformed request line gets the error body", async () => {
    const r = last(await raw("GARBAGE\r\n\r\n"));
    expect(r).toMatchObject({ status: 400, type: ERROR_TYPE });
  });

  it("a request that does not arrive in time gets a 408 with the error body", async () => {
    const started = Date.now();
    const r = last(await raw(`POST /bridges HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na`, 1));
    expect(r).toMatchObject({ status: 408, type: ERROR_TYPE, body: { code: 408 } });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("caching", () => {
  it("answers are private and not stored, but for an item's revalidation; they vary by who asks and what they accept", async () => {
    const b = await http("POST", "/bridges", { name: "c" });
    expect(b.headers.get("cache-control")).toBe("private, no-store");
    const item = await http("GET", b.json.uri);
    expect(item.headers.get("cache-control")).toBe("private, no-cache");
    expect(item.headers.get("vary")).toBe("Accept, Authorization, X-Auth-Token");
    expect((await http("GET", "/bridges")).headers.get("cache-control")).toBe("private, no-store");
    expect((await http("GET", "/nowhere")).headers.get("cache-control")).toBe("private, no-store");
  });
});

/** A GET whose answer is read as the bytes sent (fetch would undo a content coding). */
function rawGet(path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; rawHeaders: string[]; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${fx.gw}${path}`, { headers: { "x-auth-token": fx.stack.adminToken, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("content coding", () => {
  it("a cached collection is sent gzip-coded to a client that accepts gzip, the same JSON as uncoded; an item is not", async () => {
    const tenant = `gz-${Date.now()}`;
    const made = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const r = await http("POST", "/bridges", { name: `gz-${i}`, tenantId: tenant });
      expect(r.status).toBe(201);
      made.add((r.json as { id: string }).id);
    }
    // Each creation's notification reaches the gateway after its 201 and drops the kind's
    // copies again: read once they all have, so no late one undoes the copy read below.
    await waitFor("the creations on the change feed", async () => fx.events.filter((e) => made.has((e.data as { id?: string }).id ?? "")).length >= made.size);
    const path = `/bridges?tenant_id=${tenant}`;
    const plain = await rawGet(path, { "accept-encoding": "identity" });
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect((JSON.parse(plain.body.toString()) as unknown[]).length).toBe(20);
    expect(plain.headers["vary"]).toBe("Accept, Accept-Encoding, Authorization, X-Auth-Token");
    // The copy is kept after the first answer: the coded one comes from it.
    await waitFor("a gzip-coded answer", async () => (await rawGet(path, { "accept-encoding": "gzip, deflate" })).headers["content-encoding"] === "gzip");
    const coded = await rawGet(path, { "accept-encoding": "br;q=1, gzip;q=0.5" });
    expect(coded.headers["content-encoding"]).toBe("gzip");
    expect(Number(coded.headers["content-length"])).toBe(coded.body.length);
    expect(coded.body.length).toBeLessThan(plain.body.length / 4);
    expect(gunzipSync(coded.body).equals(plain.body)).toBe(true);
    expect((await rawGet(path, { "accept-encoding": "gzip;q=0, *" })).headers["content-encoding"]).toBeUndefined();
    expect((await rawGet(path, {})).headers["content-encoding"]).toBeUndefined();
    const item = (JSON.parse(plain.body.toString()) as { uri: string }[])[0]!;
    expect((await rawGet(new URL(item.uri).pathname, { "accept-encoding": "gzip" })).headers["content-encoding"]).toBeUndefined();
  });
});

describe("headers of answers from the cache", () => {
  const hits = async () => Number(/^vnm_cache_hits_total(?:\{[^}]*\})? (\d+)/m.exec((await http("GET", "/metrics")).text)?.[1] ?? 0);
  /** How many times the answer names each header. */
  const counts = (rawHeaders: string[]) => {
    const n: Record<string, number> = {};
    for (let i = 0; i < rawHeaders.length; i += 2) n[rawHeaders[i]!.toLowerCase()] = (n[rawHeaders[i]!.toLowerCase()] ?? 0) + 1;
    return n;
  };
  const EDGE = ["x-request-id", "access-control-allow-origin", "access-control-expose-headers", "cache-control", "vary"];

  it("an item hit, its 304 and a gzip-coded collection carry the request id, CORS and their own caching headers, each once", async () => {
    const b = await http("POST", "/bridges", { name: "edge-headers", tenantId: `eh-${Date.now()}` });
    const path = new URL(b.json.uri).pathname;
    let etag = "";
    const before = await hits();
    await waitFor("an item answered from the cache", async () => {
      const r = await rawGet(path, { "x-request-id": "edge-item" });
      expect(r.status).toBe(200);
      const n = counts(r.rawHeaders);
      for (const h of [...EDGE, "etag", "content-type", "content-length"]) expect(n[h], h).toBe(1);
      expect(r.headers["x-request-id"]).toBe("edge-item");
      expect(r.headers["cache-control"]).toBe("private, no-cache");
      expect(r.headers["access-control-allow-origin"]).toBe("*");
      etag = r.headers["etag"] as string;
      return (await hits()) > before;
    });
    const before304 = await hits();
    const notModified = await rawGet(path, { "if-none-match": etag, "x-request-id": "edge-304" });
    expect(notModified.status).toBe(304);
    expect(await hits()).toBeGreaterThan(before304);
    const n = counts(notModified.rawHeaders);
    for (const h of [...EDGE, "etag"]) expect(n[h], h).toBe(1);
    expect(notModified.headers["x-request-id"]).toBe("edge-304");
    expect(notModified.headers["etag"]).toBe(etag);
    expect(notModified.headers["cache-control"]).toBe("private, no-cache");

    const list = `/bridges?tenant_id=${b.json.tenantId}`;
    await waitFor("a gzip-coded collection", async () => (await rawGet(list, { "accept-encoding": "gzip" })).headers["content-encoding"] === "gzip");
    const coded = await rawGet(list, { "accept-encoding": "gzip", "x-request-id": "edge-list" });
    const c = counts(coded.rawHeaders);
    for (const h of [...EDGE, "content-encoding", "content-type", "content-length"]) expect(c[h], h).toBe(1);
    expect(coded.headers["content-encoding"]).toBe("gzip");
    expect(coded.headers["x-request-id"]).toBe("edge-list");
    expect(coded.headers["cache-control"]).toBe("private, no-store");
    expect(coded.headers["vary"]).toBe("Accept, Accept-Encoding, Authorization, X-Auth-Token");
  });
});

describe("the API's description", () => {
  it("is served at /openapi.json without a token", async () => {
    const r = await fetch(`${fx.gw}/openapi.json`);
    expect(r.status).toBe(200);
    const doc = (await r.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/bridges/{id}"]).toBeDefined();
  });
});
