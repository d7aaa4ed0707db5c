// Where the data lives on Kubernetes (deploy/k8s): a Postgres per domain (a CloudNativePG
// cluster) that only that domain's pods reach, a NATS cluster of three keeping every stream three times in production, where each
// part signs in as its own user with rights to its own subjects, and one Redis that no overlay
// multiplies (copies would each hold a different cache).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, natsPasswordVariable, ROOT, serviceDomains } from "@vnm/kit/repo";
import { type Proc, startProcess, waitFor } from "@vnm/kit/testing";
import { AckPolicy, connect } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are inspected freely
type Doc = { kind: string; metadata: { name: string }; spec: any; data?: Record<string, string> };

function render(overlay: string): Doc[] {
  const rendered = execFileSync("kubectl", ["kustomize", join(ROOT, "deploy/k8s", overlay)], { encoding: "utf8" });
  return parseAllDocuments(rendered).map((d) => d.toJSON() as Doc);
}

describe("production overlay", () => {
  const docs = render("overlays/production");
  const find = (kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name);

  it("gives every domain a database of its own, reached by that domain's pods only", () => {
    for (const d of serviceDomains()) {
      const db = find("Cluster", `vnm-${d}-db`);
      expect(db, d).toBeDefined();
      expect(db!.spec.storage.size).toBe("20Gi");
      const env = find("Deployment", `vnm-${d}`)!.spec.template.spec.containers[0].env;
      const url = env.find((e: { name: string }) => e.name === "DATABASE_URL").valueFrom.secretKeyRef;
      expect(url.key).toBe("DATABASE_URL");
      expect(url.name).toMatch(new RegExp(`^vnm-${d}-[a-z0-9]+$`));
      // Postgres from its service, its own instances and CloudNativePG's operator only.
      const policy = find("NetworkPolicy", `vnm-${d}-db`)!;
      const pod = (name: string) => ({ podSelector: { matchLabels: { "app.kubernetes.io/name": name } } });
      const operator = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "cnpg-system" } }, podSelector: { matchLabels: { "app.kubernetes.io/name": "cloudnative-pg" } } };
      const instances = { podSelector: { matchLabels: { "cnpg.io/cluster": `vnm-${d}-db` } } };
      expect(policy.spec.podSelector).toEqual(instances.podSelector);
      expect(policy.spec.ingress[0]).toEqual({ from: [pod(`vnm-${d}`), instances, operator], ports: [{ protocol: "TCP", port: 5432 }] });
    }
  });

  it("runs NATS as a cluster of three whose streams keep three replicas", () => {
    expect(find("StatefulSet", "nats")!.spec.replicas).toBe(3);
    const conf = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name.startsWith("nats-config"))!.data!["nats.conf"]!;
    expect(conf).toContain("jetstream");
    for (const i of [0, 1, 2]) expect(conf).toContain(`nats://nats-${i}.nats:6222`);
    const config = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name.startsWith("vnm-config"))!.data!;
    expect(config["VNM_BUS_REPLICAS"]).toBe("3");
  });

  it("keeps one Redis, capped in memory, reached by the gateways only", () => {
    const redis = find("Deployment", "redis")!;
    expect(redis.spec.replicas).toBe(1);
    expect(redis.spec.template.spec.containers[0].args).toEqual(expect.arrayContaining(["--maxmemory", "--maxmemory-policy", "allkeys-lru"]));
    expect(find("NetworkPolicy", "redis")!.spec.ingress[0].from[0].podSelector.matchLabels).toEqual({ "app.kubernetes.io/name": "vnm-gateway" });
    expect(find("Deployment", "vnm-gateway")!.spec.replicas).toBe(3);
  });
});

it("the dev overlay runs one NATS server, whose streams keep one replica, and one Postgres instance per domain, whose commits wait for no standby", () => {
  const docs = render("overlays/dev");
  for (const c of docs.filter((d) => d.kind === "Cluster")) {
    expect(c.spec.instances, c.metadata.name).toBe(1);
    expect(c.spec.postgresql.synchronous, c.metadata.name).toBeUndefined();
    expect(c.spec.enablePDB, c.metadata.name).toBe(false);
  }
  expect(docs.filter((d) => d.kind === "Cluster")).toHaveLength(serviceDomains().length);
  expect(docs.find((d) => d.kind === "StatefulSet" && d.metadata.name === "nats")!.spec.replicas).toBe(1);
  const config = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name.startsWith("vnm-config"))!.data!;
  expect(config["VNM_BUS_REPLICAS"] ?? "1").toBe("1");
  expect(docs.find((d) => d.kind === "ConfigMap" && d.metadata.name.startsWith("nats-config"))!.data!["nats.conf"]).not.toContain("cluster");
});

it("the image runs every process with the flags the launcher and the tests use (NODE_FLAGS)", async () => {
  const { NODE_FLAGS } = await import("@vnm/kit/repo");
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(join(ROOT, "deploy/Dockerfile"), "utf8"));
  expect(entry).not.toBeNull();
  expect(JSON.parse(entry![1]!)).toEqual(["node", ...NODE_FLAGS, "deploy/entry.js"]);
});

it("the image runs every process on jemalloc with the configuration the launcher and the tests give (JEMALLOC_CONF)", async () => {
  const { JEMALLOC_CONF } = await import("@vnm/kit/repo");
  const dockerfile = readFileSync(join(ROOT, "deploy/Dockerfile"), "utf8");
  const env = /^ENV LD_PRELOAD=(\S+) MALLOC_CONF=(\S+)$/m.exec(dockerfile);
  expect(env).not.toBeNull();
  expect(env![2]).toBe(JEMALLOC_CONF);
  expect(dockerfile).toContain(`ln -s "/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2" ${env![1]}`);
});

describe("NATS as the dev overlay configures it (its nats.conf, auth.conf and Secret, on a server of the test's own)", () => {
  const docs = render("overlays/dev");
  const dir = mkdtempSync(join(tmpdir(), "vnm-nats-auth-"));
  const configOf = (prefix: string) => docs.find((d) => d.kind === "ConfigMap" && d.metadata.name.startsWith(prefix))!.data!;
  const secret = docs.find((d) => d.kind === "Secret" && d.metadata.name.startsWith("nats-"))!.data!;
  const passwords = Object.fromEntries(Object.entries(secret).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
  let server: Proc;
  let url = "";

  beforeAll(async () => {
    const port = await freePort();
    url = `nats://127.0.0.1:${port}`;
    const conf = configOf("nats-config")["nats.conf"]!.replace("port: 4222", `port: ${port}`).replace(/http_port: \d+\n/, "").replace("/data/jetstream", join(dir, "js"));
    writeFileSync(join(dir, "nats.conf"), conf);
    writeFileSync(join(dir, "auth.conf"), configOf("nats-auth")["auth.conf"]!);
    server = startProcess("/usr/sbin/nats-server", { ...passwords, POD_NAME: "nats-0" }, [], ["-a", "127.0.0.1", "-c", join(dir, "nats.conf")]);
    await waitFor("nats-server", () => connectAs("gateway").then((nc) => nc.close().then(() => true), () => false), 10_000);
  });

  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const passwordOf = (part: string) => passwords[natsPasswordVariable(part)]!;
  // Replies come to each user's own inbox only (the kit connects with this prefix too).
  const connectAs = (part: string, pass = passwordOf(part)) => connect({ servers: url, user: part, pass, reconnect: false, inboxPrefix: `_INBOX_${part}` });

  it("lets each part in with its own password only, to publish its own domain's changes only", async () => {
    await expect(connectAs("bridge", passwordOf("lb"))).rejects.toThrow(/Authorization/i);
    const gateway = await connectAs("gateway");
    const seen: string[] = [];
    const sub = gateway.subscribe("vnm.>", { callback: (_err, msg) => seen.push(msg.subject) });
    await gateway.flush();
    const bridge = await connectAs("bridge");
    bridge.publish("vnm.lb.LoadBalancer.created");
    bridge.publish("vnm.bridge.Bridge.created");
    await bridge.flush();
    await waitFor("the bridge's own change", async () => seen.length > 0, 5_000);
    await gateway.flush();
    expect(seen).toEqual(["vnm.bridge.Bridge.created"]);
    sub.unsubscribe();
    await Promise.all([gateway.close(), bridge.close()]);
  });

  it("lets the parts use JetStream as the bus does: streams, publishing with acknowledgement, a durable consumer", async () => {
    const bridge = await connectAs("bridge");
    await (await bridge.jetstreamManager()).streams.add({ name: "VNM", subjects: ["vnm.>"] });
    const ack = await bridge.jetstream().publish("vnm.bridge.Bridge.deleted", new TextEncoder().encode('{"id":"b1"}'));
    expect(ack.seq).toBeGreaterThan(0);
    const tracing = await connectAs("tracing");
    await (await tracing.jetstreamManager()).consumers.add("VNM", { durable_name: "tracing-bridge-deletions", filter_subject: "vnm.bridge.Bridge.deleted", ack_policy: AckPolicy.Explicit });
    const consumer = await tracing.jetstream().consumers.get("VNM", "tracing-bridge-deletions");
    const message = await consumer.next({ expires: 5_000 });
    expect(message?.json()).toEqual({ id: "b1" });
    expect(await message!.ackAck()).toBe(true);
    await Promise.all([bridge.close(), tracing.close()]);
  });

  it("refuses a part a subscription deploy/nats.conf does not grant it", async () => {
    const lb = await connectAs("lb");
    const refused = new Promise<Error | null>((resolve) => lb.subscribe("vnm.>", { callback: (err) => resolve(err) }));
    await lb.flush();
    expect(String(await refused)).toMatch(/Permissions Violation/i);
    await lb.close();
  });
});
