// The deployments say what the repository has: every service of services/ is in compose and in
// the Kubernetes manifests (its own Deployment, headless Service and autoscaler, gRPC health
// probes), every process gets every service's address, and the generated manifests are current.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { addressVariable, ROOT, serviceDomains } from "@vnm/kit/repo";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { gatewayAddressesYaml, servicesYaml } from "../../deploy/k8s/generate.ts";

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are inspected freely
type Loose = any;
type Doc = { kind: string; metadata: { name: string }; spec: Record<string, Loose> };

describe("Kubernetes manifests (deploy/k8s)", () => {
  it("are what deploy/k8s/generate.ts writes from services/", () => {
    expect(readFileSync(join(ROOT, "deploy/k8s/base/services.yaml"), "utf8")).toBe(servicesYaml());
    expect(readFileSync(join(ROOT, "deploy/k8s/base/gateway-addresses.yaml"), "utf8")).toBe(gatewayAddressesYaml());
  });

  it("render with kustomize: each domain scales on its own, probed by the gRPC health service", () => {
    const rendered = execFileSync("kubectl", ["kustomize", join(ROOT, "deploy/k8s/base")], { encoding: "utf8" });
    const docs = parseAllDocuments(rendered).map((d) => d.toJSON() as Doc);
    const find = (kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name);
    const gateway = find("Deployment", "vnm-gateway")!.spec["template"].spec.containers[0];
    for (const d of serviceDomains()) {
      const dep = find("Deployment", `vnm-${d}`);
      expect(dep, d).toBeDefined();
      const c = dep!.spec["template"].spec.containers[0];
      expect(c.args).toEqual([d]);
      // Migrations as an init container: the same image and database, --migrate-only.
      const init = dep!.spec["template"].spec.initContainers[0];
      expect(init).toMatchObject({ image: c.image, args: [d, "--migrate-only"] });
      expect(init.env).toContainEqual(c.env.find((e: { name: string }) => e.name === "DATABASE_URL"));
      expect(c.readinessProbe.grpc.port).toBe(50051);
      expect(find("Service", `vnm-${d}`)!.spec["clusterIP"]).toBe("None");
      expect(find("HorizontalPodAutoscaler", `vnm-${d}`)!.spec["scaleTargetRef"].name).toBe(`vnm-${d}`);
      expect(gateway.env).toContainEqual({ name: addressVariable(d), value: `vnm-${d}:50051` });
    }
    expect(gateway.args).toEqual(["gateway"]);
    expect(gateway.readinessProbe.httpGet.path).toBe("/readyz");
  });
});

/** Each object of a rendering checked against the Kubernetes schema of its kind (kubernetes-models, offline). */
async function validateAll(docs: Doc[]): Promise<string[]> {
  const wrong: string[] = [];
  for (const d of docs) {
    const { apiVersion } = d as Doc & { apiVersion: string };
    const models = (await import(`kubernetes-models/${apiVersion}`)) as Record<string, new (o: unknown) => { validate(): void }>;
    try {
      new models[d.kind]!(d).validate();
    } catch (err) {
      wrong.push(`${d.kind}/${d.metadata.name}: ${(err as Error).message.slice(0, 300)}`);
    }
  }
  return wrong;
}

describe("Kubernetes overlays", () => {
  for (const overlay of ["base", "overlays/dev", "overlays/production"]) {
    it(`${overlay} renders, and every object is valid for its kind`, async () => {
      const rendered = execFileSync("kubectl", ["kustomize", join(ROOT, "deploy/k8s", overlay)], { encoding: "utf8" });
      const docs = parseAllDocuments(rendered).map((d) => d.toJSON() as Doc);
      expect(docs.length).toBeGreaterThan(serviceDomains().length * 5);
      expect(await validateAll(docs)).toEqual([]);
      for (const d of docs.filter((x) => x.kind === "Deployment")) {
        expect(d.spec["template"].spec.containers[0].securityContext, d.metadata.name).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true });
        expect(docs.some((x) => x.kind === "PodDisruptionBudget" && x.metadata.name === d.metadata.name)).toBe(true);
      }
    });
  }
});

describe("docker-compose.yml", () => {
  it("runs every service from the one image with every service's address, started once its dependencies are healthy", () => {
    const compose = parse(readFileSync(join(ROOT, "docker-compose.yml"), "utf8"), { merge: true }) as { services: Record<string, Loose> };
    for (const d of serviceDomains()) {
      const s = compose.services[d];
      expect(s, d).toBeDefined();
      expect(s.image).toBe(compose.services["gateway"].image);
      expect(s.command).toEqual([d]);
      expect(s.restart).toBe("unless-stopped");
      expect(s.healthcheck.test).toEqual(["CMD", "node", "deploy/entry.js", "--health"]);
      expect(s.depends_on.postgres.condition).toBe("service_healthy");
      expect(s.environment[addressVariable(d)]).toBe(`${d}:50051`);
      expect(compose.services["gateway"].environment[addressVariable(d)]).toBe(`${d}:50051`);
      expect(compose.services["gateway"].depends_on[d]).toEqual({ condition: "service_healthy" });
    }
    expect(compose.services["gateway"].command).toEqual(["gateway"]);
    for (const dep of ["postgres", "nats", "redis"]) expect(compose.services[dep].healthcheck.test.length, dep).toBeGreaterThan(0);
  });
});
