// Where the data lives on Kubernetes (deploy/k8s): a Postgres per domain that only that domain's
// pods reach, a NATS cluster of three keeping every stream three times in production, and one
// Redis that no overlay multiplies (copies would each hold a different cache).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, serviceDomains } from "@vnm/kit/repo";
import { describe, expect, it } from "vitest";
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
      const db = find("StatefulSet", `vnm-${d}-db`);
      expect(db, d).toBeDefined();
      expect(db!.spec.volumeClaimTemplates[0].metadata.name).toBe("data");
      const env = find("Deployment", `vnm-${d}`)!.spec.template.spec.containers[0].env;
      const url = env.find((e: { name: string }) => e.name === "DATABASE_URL").valueFrom.secretKeyRef;
      expect(url.key).toBe("DATABASE_URL");
      expect(url.name).toMatch(new RegExp(`^vnm-${d}-[a-z0-9]+$`));
      const policy = find("NetworkPolicy", `vnm-${d}-db`)!;
      expect(policy.spec.ingress).toEqual([{ from: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": `vnm-${d}` } } }], ports: [{ protocol: "TCP", port: 5432 }] }]);
      expect(policy.spec.egress).toEqual([]);
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

it("the dev overlay runs one NATS server, whose streams keep one replica", () => {
  const docs = render("overlays/dev");
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
