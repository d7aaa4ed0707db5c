// Reading a request body (body.ts) on a real HTTP server: the limit (413, declared or found),
// gzip (a bomb is a 413, bad data a 400), other codings (415), UTF-8 and emptiness (400), and a
// body the client cuts short (400, without waiting for what will never come).
import { once } from "node:events";
import { createServer, request, type Server } from "node:http";
import { connect } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readBodyText } from "../src/body.ts";
import type { ApiRequest } from "../src/context.ts";
import { EdgeError } from "../src/http-error.ts";

const LIMIT = 1024;
let server: Server;
let port: number;
/** What the last read came to, as the handler saw it (also when no one is left to answer). */
let outcomes: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    readBodyText(req as ApiRequest, LIMIT).then(
      (text) => {
        outcomes.push(`200 ${text.length}`);
        res.end(text);
      },
      (err: unknown) => {
        const e = err instanceof EdgeError ? err : undefined;
        outcomes.push(`${e?.status ?? 500} ${(err as Error).message}`);
        res.writeHead(e?.status ?? 500, e?.headers ?? {}).end((err as Error).message);
      },
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function post(body: Buffer | string | (Buffer | string)[], headers: Record<string, string> = {}): Promise<{ status: number; text: string; connection?: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: "127.0.0.1", method: "POST", path: "/", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => {
        text += d;
      });
      res.on("end", () => resolve({ status: res.statusCode!, text, connection: res.headers.connection }));
    });
    req.on("error", reject);
    for (const part of Array.isArray(body) ? body : [body]) req.write(part);
    req.end();
  });
}

it("reads a body within the limit, plain or gzip-coded", async () => {
  const json = JSON.stringify({ name: "é".repeat(100) });
  expect(await post(json, { "content-length": String(Buffer.byteLength(json)) })).toMatchObject({ status: 200, text: json });
  expect(await post(gzipSync(json), { "content-encoding": "gzip" })).toMatchObject({ status: 200, text: json });
  expect(await post(gzipSync(json), { "content-encoding": "X-GZIP" })).toMatchObject({ status: 200, text: json });
});

it("answers 413 for a body over the limit, declared, sent in chunks or inflated from gzip; drains one declared up to 4 times the limit on its open connection, closes the others", async () => {
  // The client sends all of it and reads the 413 (post rejects on a reset connection).
  const big = "x".repeat(LIMIT + 1);
  const declared = await post(big, { "content-length": String(big.length) });
  expect(declared).toMatchObject({ status: 413, text: `Request body is larger than the limit of ${LIMIT} bytes`, connection: "keep-alive" });
  const huge = "x".repeat(4 * LIMIT + 1);
  expect(await post(huge, { "content-length": String(huge.length) }).catch((err: Error) => ({ status: 413, connection: `close (${err.message})` }))).toMatchObject({ status: 413, connection: expect.stringMatching(/^close/) });
  const chunked = await post(["x".repeat(600), "x".repeat(600)], { "transfer-encoding": "chunked" });
  expect(chunked).toMatchObject({ status: 413, connection: "close" });
  const bomb = gzipSync(Buffer.alloc(512 * 1024, 32));
  expect(bomb.length).toBeLessThan(LIMIT);
  expect(await post(bomb, { "content-encoding": "gzip" })).toMatchObject({ status: 413 });
});

it("answers 415 for another coding, 400 for bad gzip, bad UTF-8 and an empty body", async () => {
  expect(await post("{}", { "content-encoding": "br" })).toMatchObject({ status: 415, text: "Content-Encoding br is not supported; use gzip or none" });
  expect(await post("not gzip", { "content-encoding": "gzip" })).toMatchObject({ status: 400, text: "Request body is not valid gzip data" });
  expect(await post(Buffer.from([0x7b, 0xff, 0x7d]))).toMatchObject({ status: 400, text: "Request body is not valid UTF-8" });
  expect(await post(" \n")).toMatchObject({ status: 400, text: "Request body is empty; a JSON object is required" });
});

it("gives up at once on a body the client cuts short", async () => {
  outcomes = [];
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"name\":");
  await new Promise((r) => setTimeout(r, 100));
  socket.destroy();
  await expect.poll(() => outcomes.length, { timeout: 2_000 }).toBe(1);
  expect(outcomes[0]).toMatch(/^400 Request body (ended before its end|could not be read)/);
});
