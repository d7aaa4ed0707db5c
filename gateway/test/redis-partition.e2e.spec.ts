// The collection cache when the gateway loses Redis while Redis keeps its data (a partition,
// made here with a TCP proxy the test cuts): reads stay right through the cut, and the gateway
// trusts the cache again only after resetting it, since Redis still holds the list as it was
// before the write it could not invalidate.
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEPS, freePort, httpClient, Stack, waitFor } from "@vnm/e2e/harness";
import { TcpProxy } from "@vnm/e2e/tcp-proxy";

const stack = new Stack();
let viaProxy = "";
const http = httpClient(() => viaProxy, "application/json", () => stack.adminToken);

let proxy: TcpProxy;

beforeAll(async () => {
  proxy = new TcpProxy(await freePort(), DEPS.redisUrl);
  await proxy.open();
  await stack.startServices();
  viaProxy = await stack.startGateway({ REDIS_URL: `redis://127.0.0.1:${proxy.port}` });
});

afterAll(async () => {
  await stack.stop();
  await proxy.cut().catch(() => {});
});

const ids = async (base: string) =>
  ((await http("GET", `${base}/bridges?tenant_id=partition`)).json as { id: string }[]).map((b) => b.id);

it("a write made while Redis is cut off is never hidden by the list cached before it", async () => {
  const first = (await http("POST", `${viaProxy}/bridges`, { name: "one", tenantId: "partition" })).json.id;
  expect(await ids(viaProxy)).toEqual([first]);
  expect(await ids(viaProxy)).toEqual([first]); // cached in Redis now

  await proxy.cut();
  const second = await http("POST", `${viaProxy}/bridges`, { name: "two", tenantId: "partition" });
  expect(second.status).toBe(201);
  // Redis could not be told; the gateway reads from the service instead.
  expect(await ids(viaProxy)).toEqual([first, second.json.id]);
  // Still ready (it serves without Redis), degraded, naming the cache.
  const cut = await http("GET", `${viaProxy}/readyz`);
  expect(cut.status).toBe(200);
  expect(cut.json).toMatchObject({ status: "degraded", degraded: ["cache"], checks: { cache: "unavailable" } });

  await proxy.open();
  await waitFor("the cache to be reported up again", async () => (await http("GET", `${viaProxy}/readyz`)).json.status === "ok", 15_000);
  // Redis still held [first]; the gateway reset the cache before using it again.
  expect(await ids(viaProxy)).toEqual([first, second.json.id]);
  expect(await ids(viaProxy)).toEqual([first, second.json.id]);
  const third = (await http("POST", `${viaProxy}/bridges`, { name: "three", tenantId: "partition" })).json.id;
  expect(await ids(viaProxy)).toEqual([first, second.json.id, third]);
});
