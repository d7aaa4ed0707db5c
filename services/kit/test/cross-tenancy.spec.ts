// Tenancy across services: a kind whose tenant follows a parent owned by another service is
// checked by asking that service over gRPC with the caller's token; never a 500, never skipped.
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { status } from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadGrpc } from "../src/proto.ts";
import { DEPS, type DirectService, directService, dropSchema, freePort, type Proc, protoDirWith, startProcess, waitFor } from "../src/testing.ts";
import { createUpstream } from "../src/upstream.ts";

// The contract of this test: the repository's protos and the zoo fixture, built in a directory of its own.
const protoDir = protoDirWith({ "vnm/zoo/v1/zoo.proto": readFileSync(join(import.meta.dirname, "fixtures", "zoo.proto"), "utf8") });

let bridge: DirectService;
let zoo: Proc;
let zooAddress = "";
const zooSchema = `zoo_${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  bridge = await directService("bridge", { VNM_PROTO_DIR: protoDir }, ["zoo"]);
  zooAddress = `127.0.0.1:${await freePort()}`;
  zoo = startProcess("services/kit/test/fixtures/zoo-service.ts", {
    DATABASE_URL: DEPS.databaseUrl,
    NATS_URL: "",
    GRPC_PORT: zooAddress.split(":")[1],
    VNM_DB_SCHEMA: zooSchema,
    ...bridge.identity.envFor("zoo"),
    VNM_PROTO_DIR: protoDir,
    VNM_BRIDGE_ADDR: bridge.address,
  });
});

afterAll(async () => {
  await zoo?.stop();
  await dropSchema(zooSchema);
  await bridge?.stop();
  rmSync(protoDir, { recursive: true, force: true });
});

/** Lists the animals under a bridge as `who`, through the zoo service. */
async function animals(bridgeId: string, token: string): Promise<{ code?: number; items?: unknown[] }> {
  const up = createUpstream(loadGrpc(protoDir), [{ name: "vnm.zoo.v1.ZooService", domain: "zoo" }], () => zooAddress);
  try {
    const r = await up.call("vnm.zoo.v1.ZooService", "ListAnimals", { bridgeId }, 5_000, token);
    return { items: r.response["items"] as unknown[] };
  } catch (err) {
    return { code: (err as { code: number }).code };
  } finally {
    up.close();
  }
}

it("asks the bridge service whose bridge it is: its tenant sees, another tenant finds nothing, down is unavailable", async () => {
  const created = await bridge.call("vnm.bridge.v1.BridgeService", "CreateBridge", { bridge: { name: "b", tenantId: "A" } });
  const id = created.res.id as string;
  const tenantA = bridge.token({ role: "tenant_admin", tenantId: "A" });
  const tenantB = bridge.token({ role: "tenant_admin", tenantId: "B" });
  await waitFor("the zoo service", async () => (await animals(id, tenantA)).code !== status.UNAVAILABLE).catch((err) => {
    throw new Error(`${err}: ${zoo.output.join("")}`);
  });
  expect((await animals(id, tenantA)).items).toHaveLength(1);
  expect((await animals(id, tenantB)).code).toBe(status.NOT_FOUND);
  expect((await animals("00000000-0000-4000-8000-000000000001", tenantA)).code).toBe(status.NOT_FOUND);
  expect((await animals(id, bridge.token())).items).toHaveLength(1);
  await bridge.stop({ keepSchema: true });
  expect((await animals(id, tenantA)).code).toBe(status.UNAVAILABLE);
});
