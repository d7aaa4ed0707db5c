// The suites' harness: isolated stacks of real processes (stack.ts) and the vitest fixtures and
// assertions built on them.
import { request } from "node:http";
import { DEPS, dropSchema, freePort, type Proc, ROOT, startProcess, waitFor } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect } from "vitest";
import { type ChangeSeen, type HttpResult, httpClient, Stack } from "./stack.ts";

export { DEPS, dropSchema, freePort, type Proc, ROOT, startProcess, waitFor };
export { type ChangeSeen, type HttpResult, httpClient, type Launch, Stack } from "./stack.ts";

export const ERROR_TYPE = "application/vnd.org.service.Error-v1+json";

/** The response is an error of this status with the API's error body (docs/api.md). */
export function expectError(r: HttpResult, status: number): void {
  // A different status names what the gateway said, so a failure in CI shows its cause.
  expect(r.status, `answer: ${r.text.slice(0, 300)}`).toBe(status);
  expect(r.headers.get("content-type")).toBe(ERROR_TYPE);
  expect(r.json.code).toBe(status);
  expect(typeof r.json.message).toBe("string");
  expect(r.json.message.length).toBeGreaterThan(0);
  expect(r.json.requestId).toBe(r.headers.get("x-request-id"));
}

export interface StackFixture {
  stack: Stack;
  /** The gateway's base URL, once the stack runs. */
  gw: string;
  /** Every change notification the stack published. */
  events: ChangeSeen[];
}

/** One stack for a test file: every service and a gateway started before its tests, stopped after. */
export function useStack(gatewayEnv: NodeJS.ProcessEnv = {}): StackFixture {
  const fx: StackFixture = { stack: new Stack(), gw: "", events: [] };
  beforeAll(async () => {
    fx.events = await fx.stack.watchChanges();
    await fx.stack.startServices();
    fx.gw = await fx.stack.startGateway(gatewayEnv);
  });
  afterAll(async () => {
    await fx.stack.stop();
  });
  return fx;
}

export interface FeedEvent {
  event: string;
  id: string;
  data: { kind: string; id: string; uri: string };
}

/** Opens the feed and collects its events until close(). */
export async function openFeed(gw: string, token: string, lastEventId?: string) {
  const ac = new AbortController();
  const headers: Record<string, string> = { "x-auth-token": token, accept: "text/event-stream" };
  if (lastEventId) headers["last-event-id"] = lastEventId;
  const res = await fetch(`${gw}/events`, { headers, signal: ac.signal });
  if (res.status !== 200) throw new Error(`GET /events answered ${res.status}: ${await res.text()}`);
  const events: FeedEvent[] = [];
  let buffer = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of res.body ?? []) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const fields = Object.fromEntries(
          block
            .split("\n")
            .filter((l) => !l.startsWith(":") && l.includes(":"))
            .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]),
        );
        if (fields["data"]) events.push({ event: fields["event"] ?? "", id: fields["id"] ?? "", data: JSON.parse(fields["data"]) });
      }
    }
  })().catch(() => {});
  return {
    res,
    events,
    close: async () => {
      ac.abort();
      await reading;
    },
  };
}

/**
 * The fault test every service gets: killed, `path` (one of its endpoints) answers 503 with the
 * error body naming it while the rest of the API works; started again, it serves unaided.
 */
export async function expectServiceLossAndReturn(fx: StackFixture, domain: string, path: string): Promise<void> {
  const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
  await fx.stack.stopService(domain);
  const r = await http("GET", path);
  expectError(r, 503);
  expect(r.json.message).toContain(`${domain} service`);
  expect((await http("GET", "/bridges")).status).toBe(200);
  await fx.stack.startServices(domain);
  await waitFor(`the ${domain} service back`, async () => (await http("GET", path)).status === 200, 20_000);
}

/** A GET sent with node:http, so that headers fetch will not send as given (Host) go as written. */
export function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(url), { headers }, (res) => {
      let body = "";
      res.on("data", (d) => {
        body += d;
      });
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}
