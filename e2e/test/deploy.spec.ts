// The deployments say what the repository has: every service of services/ is in compose and in
// the Kubernetes manifests (its own Deployment, headless Service and autoscaler, gRPC health
// probes), every process gets every service's address, and the generated manifests are current.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { addressVariable, ROOT, serviceDomains } from "@vnm/kit/repo";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { generatedFiles } from "../../deploy/k8s/generate.ts";
import { modelProblems, strictProblems } from "./k8s-schema.ts";

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are inspected freely
type Loose = any;
type Doc = { kind: string; metadata: { name: string }; spec: Record<string, Loose> };

describe("Kubernetes manifests (deploy/k8s)", () => {
  it("are what deploy/k8s/generate.ts writes from services/", () => {
    for (const [file, text] of Object.entries(generatedFiles())) expect(readFileSync(join(ROOT, "deploy/k8s/base", file), "utf8"), file).toBe(text);
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
      // Migrations as an init container: the same image and login role, and the database's
      // administrator, which the service itself never holds.
      const init = dep!.spec["template"].spec.initContainers[0];
      expect(init).toMatchObject({ image: c.image, args: [d, "--migrate-only"] });
      expect(init.env).toContainEqual(c.env.find((e: { name: string }) => e.name === "DATABASE_URL"));
      expect(init.env.map((e: { name: string }) => e.name)).toContain("VNM_DATABASE_ADMIN_URL");
      expect(c.env.map((e: { name: string }) => e.name)).not.toContain("VNM_DATABASE_ADMIN_URL");
      expect(c.readinessProbe.grpc.port).toBe(50051);
      expect(find("Service", `vnm-${d}`)!.spec["clusterIP"]).toBe("None");
      expect(find("HorizontalPodAutoscaler", `vnm-${d}`)!.spec["scaleTargetRef"].name).toBe(`vnm-${d}`);
      expect(gateway.env).toContainEqual({ name: addressVariable(d), value: `vnm-${d}:50051` });
    }
    expect(gateway.args).toEqual(["gateway"]);
    expect(gateway.readinessProbe.httpGet.path).toBe("/readyz");
  });
});

describe("Kubernetes overlays", () => {
  for (const overlay of ["base", "overlays/dev", "overlays/production"]) {
    it(`${overlay} renders, and every object is valid for its kind`, async () => {
      const rendered = execFileSync("kubectl", ["kustomize", join(ROOT, "deploy/k8s", overlay)], { encoding: "utf8" });
      const docs = parseAllDocuments(rendered).map((d) => d.toJSON() as Doc);
      expect(docs.length).toBeGreaterThan(serviceDomains().length * 5);
      // Every value as its kind's published validator reads it (CloudNativePG's for a Cluster), and
      // strictly: an unknown field anywhere (which an API server drops or refuses) is an error.
      expect(await modelProblems(docs)).toEqual([]);
      expect(strictProblems(docs)).toEqual([]);
      for (const d of docs.filter((x) => x.kind === "Deployment")) {
        expect(d.spec["template"].spec.containers[0].securityContext, d.metadata.name).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true });
        expect(docs.some((x) => x.kind === "PodDisruptionBudget" && x.metadata.name === d.metadata.name)).toBe(true);
      }
      // Every database cluster of several instances has the operator's disruption budgets (a
      // lone one's would hold a node drain back for ever).
      const clusters = docs.filter((x) => x.kind === "Cluster");
      expect(clusters).toHaveLength(serviceDomains().length);
      for (const c of clusters) expect(c.spec["enablePDB"], c.metadata.name).toBe(c.spec["instances"] > 1);
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

/**
 * Whether a label selector picks the pods of these labels, as the API server reads it: an empty
 * selector picks every pod, and a field it does not know is dropped (so picks every pod too).
 */
function picks(selector: Loose, labels: Record<string, string>): boolean {
  const has = (key: string) => Object.hasOwn(labels, key);
  const expression = (e: Loose) =>
    e.operator === "In" ? has(e.key) && e.values.includes(labels[e.key]) : e.operator === "NotIn" ? !has(e.key) || !e.values.includes(labels[e.key]) : e.operator === "Exists" ? has(e.key) : e.operator === "DoesNotExist" ? !has(e.key) : false;
  return Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v) && (selector?.matchExpressions ?? []).every(expression);
}

/** The pod templates of a rendering: every Deployment's and StatefulSet's. */
function podsOf(docs: Doc[]): { name: string; spec: Loose }[] {
  return docs.filter((d) => d.kind === "Deployment" || d.kind === "StatefulSet").map((d) => ({ name: d.metadata.name, spec: d.spec["template"].spec }));
}

/** The CloudNativePG clusters of a rendering, whose pods the operator makes. */
const clustersOf = (docs: Doc[]) => docs.filter((d) => d.kind === "Cluster");

/**
 * The labels of a workload's pods: a pod template's; a CloudNativePG cluster's pods carry what it
 * passes on (inheritedMetadata) and the operator's own label of the cluster.
 */
function podLabels(d: Doc): Record<string, string> {
  if (d.kind === "Cluster") return { ...d.spec["inheritedMetadata"]?.labels, "cnpg.io/cluster": d.metadata.name };
  return d.spec["template"].metadata.labels;
}

/** The Secrets a pod template names: in env, envFrom and volumes (projected ones too). */
function secretsNamed(pod: Loose): string[] {
  const containers = [...pod.containers, ...(pod.initContainers ?? [])];
  const names = containers.flatMap((c: Loose) => [
    ...(c.env ?? []).map((e: Loose) => e.valueFrom?.secretKeyRef?.name),
    ...(c.envFrom ?? []).map((e: Loose) => e.secretRef?.name),
  ]);
  for (const v of pod.volumes ?? []) names.push(v.secret?.secretName, ...(v.projected?.sources ?? []).map((s: Loose) => s.secret?.name));
  return [...new Set(names.filter(Boolean))] as string[];
}

describe("production overlay: secrets, pod security, network", () => {
  const rendered = execFileSync("kubectl", ["kustomize", join(ROOT, "deploy/k8s/overlays/production")], { encoding: "utf8" });
  const docs = parseAllDocuments(rendered).map((d) => d.toJSON() as Doc & { metadata: { labels?: Record<string, string> } });
  const policies = docs.filter((d) => d.kind === "NetworkPolicy");
  const policy = (name: string) => policies.find((p) => p.metadata.name === name)!.spec;
  const monitoring = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } };

  it("gives every workload a Secret of its own: each Secret is named by exactly one workload", () => {
    const users = new Map<string, string[]>();
    for (const pod of podsOf(docs)) for (const s of secretsNamed(pod.spec)) users.set(s, [...(users.get(s) ?? []), pod.name]);
    // A database cluster's owner, which the operator sets up.
    for (const c of clustersOf(docs)) {
      const name = c.spec["bootstrap"].initdb.secret.name;
      users.set(name, [...(users.get(name) ?? []), c.metadata.name]);
    }
    for (const secret of docs.filter((d) => d.kind === "Secret")) expect(users.get(secret.metadata.name), secret.metadata.name).toHaveLength(1);
    for (const [s, who] of users) expect(docs.some((d) => d.kind === "Secret" && d.metadata.name === s), `${s} (${who.join()})`).toBe(true);
    // The gateway, the services, NATS and Redis; a database cluster per service.
    expect(podsOf(docs).length).toBe(1 + serviceDomains().length + 2);
    expect(clustersOf(docs).length).toBe(serviceDomains().length);
    expect(rendered).not.toContain("VNM_TOKEN_SECRET");
  });

  it("replaces every vnm Deployment without a gap: a new pod before an old one goes, which leaves the endpoints and drains within its grace period", () => {
    const deployments = docs.filter((d) => d.kind === "Deployment" && d.metadata.name.startsWith("vnm-"));
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(["vnm-gateway", ...serviceDomains().map((d) => `vnm-${d}`)].sort());
    for (const d of deployments) {
      const spec = d.spec as { strategy: unknown; template: { spec: { terminationGracePeriodSeconds: number; containers: { lifecycle?: unknown }[] } } };
      expect(spec.strategy, d.metadata.name).toEqual({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
      expect(spec.template.spec.containers[0]!.lifecycle, d.metadata.name).toEqual({ preStop: { exec: { command: ["sleep", "5"] } } });
      // 5 s out of the endpoints, then the drain (VNM_DRAIN_MS, 10 s by default), then a margin.
      expect(spec.template.spec.terminationGracePeriodSeconds, d.metadata.name).toBeGreaterThanOrEqual(5 + 10 + 5);
    }
  });

  it("runs every pod under the restricted Pod Security Standard, in a namespace that enforces it", () => {
    const ns = docs.find((d) => d.kind === "Namespace")!;
    expect(ns.metadata).toMatchObject({ name: "vnm", labels: { "pod-security.kubernetes.io/enforce": "restricted" } });
    for (const { name, spec } of podsOf(docs)) {
      expect(spec.automountServiceAccountToken, name).toBe(false);
      expect(spec.hostNetwork ?? false, name).toBe(false);
      for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
        const effective = { ...spec.securityContext, ...c.securityContext };
        const where = `${name}/${c.name}`;
        expect(effective.runAsNonRoot, where).toBe(true);
        expect(effective.runAsUser ?? 1, where).toBeGreaterThan(0);
        expect(effective.seccompProfile, where).toEqual({ type: "RuntimeDefault" });
        expect(effective.allowPrivilegeEscalation, where).toBe(false);
        expect(effective.capabilities, where).toEqual({ drop: ["ALL"] });
        expect(effective.readOnlyRootFilesystem, where).toBe(true);
      }
      for (const v of spec.volumes ?? []) expect(Object.keys(v).filter((k) => k !== "name"), `${name}: ${v.name}`).toEqual([expect.stringMatching(/^(emptyDir|configMap|secret|projected|persistentVolumeClaim)$/)]);
    }
  });

  it("denies all traffic by default; each pod reaches only named peers, never an address range but the tunnel's device networks", () => {
    expect(policy("default-deny")).toEqual({ podSelector: {}, policyTypes: ["Ingress", "Egress"], ingress: [], egress: [] });
    for (const p of policies) {
      for (const rule of p.spec["egress"] ?? []) {
        expect(rule.to?.length, `${p.metadata.name}: a rule without "to" reaches everywhere`).toBeGreaterThan(0);
        if (p.metadata.name === "vnm-tunnel-devices") expect(rule.ports).toEqual([{ protocol: "TCP", port: 6640 }]);
        else for (const peer of rule.to) expect(peer.ipBlock, p.metadata.name).toBeUndefined();
      }
      for (const rule of p.spec["ingress"] ?? []) expect(rule.ports?.length, `${p.metadata.name}: a rule without ports opens every port`).toBeGreaterThan(0);
    }
    // The operator's list of device networks is empty until set.
    expect(policy("vnm-tunnel-devices").egress).toEqual([]);
    expect(rendered).not.toMatch(/0\.0\.0\.0\/0|169\.254\./);
    // Every pod is covered by a policy of its own, besides the default denial.
    for (const name of [...podsOf(docs).map((p) => p.name), ...clustersOf(docs).map((c) => c.metadata.name)]) {
      expect(policies.some((p) => p.metadata.name !== "default-deny" && JSON.stringify(p.spec["podSelector"]).includes(`"${name}"`)), name).toBe(true);
    }
  });

  // Which pods each policy applies to and what they may then reach, read as the API server reads
  // the policies (a podSelector it does not understand picks every pod of the namespace).
  const workloads = docs.filter((d) => d.kind === "Deployment" || d.kind === "StatefulSet" || d.kind === "Cluster").map((d) => ({ name: d.metadata.name, labels: podLabels(d) }));
  const picked = (selector: Loose) => workloads.filter((w) => picks(selector, w.labels)).map((w) => w.name).sort();
  const governing = (workload: string) => policies.filter((p) => picked(p.spec["podSelector"]).includes(workload));
  /**
   * The workloads of the namespace a workload's policies let it reach (egress) or be reached from
   * (ingress) on a TCP port; any peer outside the namespace must be one of `outside`.
   */
  const peersOn = (workload: string, direction: "ingress" | "egress", port: number, outside: Loose[] = []) => {
    const rules = governing(workload).flatMap((p) => (p.spec[direction] ?? []) as Loose[]);
    const open = rules.filter((r) => r.ports.some((x: Loose) => x.port === port && (x.protocol ?? "TCP") === "TCP"));
    const peers = open.flatMap((r) => r[direction === "egress" ? "to" : "from"] as Loose[]);
    expect(peers.filter((x) => !x.podSelector || x.namespaceSelector || x.ipBlock), `${workload} ${direction} ${port}: only pods of the namespace`).toEqual(outside);
    return [...new Set(peers.filter((x) => !x.namespaceSelector).flatMap((x) => picked(x.podSelector)))].sort();
  };
  const operator = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "cnpg-system" } }, podSelector: { matchLabels: { "app.kubernetes.io/name": "cloudnative-pg" } } };

  it("applies each policy to its own workload's pods only: the gateway's to the gateway, a service's to that service, a database's to that database", () => {
    const expected: Record<string, string[]> = {
      "default-deny": workloads.map((w) => w.name).sort(),
      "vnm-gateway": ["vnm-gateway"],
      "vnm-tunnel-devices": ["vnm-tunnel"],
      "vnm-databases-api-server": serviceDomains().map((d) => `vnm-${d}-db`).sort(),
      nats: ["nats"],
      redis: ["redis"],
    };
    for (const d of serviceDomains()) {
      expected[`vnm-${d}`] = [`vnm-${d}`];
      expected[`vnm-${d}-db`] = [`vnm-${d}-db`];
    }
    expect(Object.fromEntries(policies.map((p) => [p.metadata.name, picked(p.spec["podSelector"])]))).toEqual(expected);
  });

  it("lets a service reach its own database only, and a database be reached by its service, its own instances and the operator only", () => {
    for (const w of workloads) {
      // A service its own database; a database's instances each other (streaming replication).
      const own = /^vnm-([a-z]+)(-db)?$/.exec(w.name);
      const expected = own && own[1] !== "gateway" ? [`vnm-${own[1]}-db`] : [];
      expect(peersOn(w.name, "egress", 5432), `${w.name} reaches on 5432`).toEqual(expected);
      expect(peersOn(w.name, "egress", 8000), `${w.name} reaches on 8000`).toEqual(own?.[2] ? [w.name] : []);
    }
    for (const d of serviceDomains()) {
      const db = `vnm-${d}-db`;
      expect(peersOn(db, "ingress", 5432, [operator]), db).toEqual([db, `vnm-${d}`].sort());
      expect(peersOn(db, "ingress", 8000, [operator]), db).toEqual([db]);
      // Its instances reach nothing else in the namespace, on any port: only DNS (kube-system) besides.
      const ports = governing(db).flatMap((p) => (p.spec["egress"] ?? []) as Loose[]).flatMap((r) => r.ports.map((x: Loose) => x.port));
      expect([...new Set(ports)].sort(), db).toEqual([53, 5432, 8000]);
    }
    expect(peersOn("redis", "ingress", 6379)).toEqual(["vnm-gateway"]);
    expect(peersOn("nats", "ingress", 4222)).toEqual(["vnm-gateway", ...serviceDomains().map((d) => `vnm-${d}`)].sort());
  });

  it("lets every part that resolves names (the gateway, the services, their databases, NATS) reach the cluster's DNS on UDP and TCP 53", () => {
    const dns = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } }, podSelector: { matchLabels: { "k8s-app": "kube-dns" } } };
    for (const name of ["vnm-gateway", ...serviceDomains().flatMap((d) => [`vnm-${d}`, `vnm-${d}-db`]), "nats"]) {
      const rules = governing(name).flatMap((p) => (p.spec["egress"] ?? []) as Loose[]);
      expect(rules.filter((r) => r.to.some((peer: Loose) => JSON.stringify(peer) === JSON.stringify(dns))).flatMap((r) => r.ports), name).toEqual(
        expect.arrayContaining([
          { protocol: "UDP", port: 53 },
          { protocol: "TCP", port: 53 },
        ]),
      );
    }
  });

  it("admits gRPC only from the parts that call a service, metrics only from the monitoring namespace, a database only from its service", () => {
    // Besides the gateway: a trace's, a port's and a VTEP binding's bridge (tunnel asks bridge),
    // a bridge's VXLAN ports (routing tells bridge), a router's load balancer, a binding's host
    // (routing asks tunnel), a host's bindings and a bound bridge's VXLAN port (tunnel asks
    // routing), a load balancer's router (lb asks routing), a mirror's port (policy asks routing),
    // a trace's router or port (tracing asks routing),
    // a device's filter chains and mirrors (bridge and routing ask policy); a tenant's usage (the
    // quota service asks the domains holding a tenant's kinds) and its limits (they ask quota).
    const CALLERS: Record<string, string[]> = {
      bridge: ["vnm-gateway", "vnm-quota", "vnm-routing", "vnm-tracing", "vnm-tunnel"],
      compat: ["vnm-gateway", "vnm-quota"],
      lb: ["vnm-gateway", "vnm-routing"],
      policy: ["vnm-gateway", "vnm-bridge", "vnm-quota", "vnm-routing"],
      qos: ["vnm-gateway", "vnm-quota"],
      routing: ["vnm-gateway", "vnm-lb", "vnm-policy", "vnm-quota", "vnm-tracing", "vnm-tunnel"],
      tunnel: ["vnm-gateway", "vnm-routing"],
      quota: ["vnm-gateway", "vnm-bridge", "vnm-compat", "vnm-policy", "vnm-qos", "vnm-routing"],
    };
    const pod = (name: string) => ({ podSelector: { matchLabels: { "app.kubernetes.io/name": name } } });
    for (const d of serviceDomains()) {
      const ingress = policy(`vnm-${d}`).ingress as Loose[];
      const grpc = ingress.filter((r) => r.ports.some((p: Loose) => p.port === 50051));
      const callers = d === "identity" ? ["vnm-gateway", ...serviceDomains().filter((x) => x !== "identity").map((x) => `vnm-${x}`)] : (CALLERS[d] ?? ["vnm-gateway"]);
      expect(grpc.flatMap((r) => r.from), d).toEqual(callers.map(pod));
      // A database's pods by the operator's label of their cluster: its instances and its jobs.
      const instances = { podSelector: { matchLabels: { "cnpg.io/cluster": `vnm-${d}-db` } } };
      expect(policy(`vnm-${d}-db`).ingress, d).toEqual([
        { from: [pod(`vnm-${d}`), instances, operator], ports: [{ protocol: "TCP", port: 5432 }] },
        { from: [instances, operator], ports: [{ protocol: "TCP", port: 8000 }] },
        { from: [monitoring], ports: [{ protocol: "TCP", port: 9187 }] },
      ]);
      expect(policy(`vnm-${d}`).egress, d).toContainEqual({ to: [instances], ports: [{ protocol: "TCP", port: 5432 }] });
    }
    for (const p of policies) {
      for (const rule of p.spec["ingress"] ?? []) {
        if (rule.ports.some((x: Loose) => x.port === 9464 || x.port === 8222 || x.port === 9187)) expect(rule.from, p.metadata.name).toEqual([monitoring]);
      }
    }
  });

  it("admits the gateway's HTTP port from the ingress controller and monitoring only, so the X-Forwarded-For hop it trusts is the controller's", () => {
    const controller = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ingress-nginx" } } };
    expect(policy("vnm-gateway").ingress).toEqual([{ from: [controller, monitoring], ports: [{ protocol: "TCP", port: 8080 }] }]);
    const env = docs.find((d) => d.kind === "Deployment" && d.metadata.name === "vnm-gateway")!.spec["template"].spec.containers[0].env as Loose[];
    expect(env.find((e) => e.name === "VNM_TRUST_PROXY")?.value).toBe("1");
  });


  // High availability: which engine keeps each part's state through the loss of a node
  // (docs/operations.md, "Kubernetes: high availability").
  const hostname = "kubernetes.io/hostname";
  const secretValues = (name: string): Record<string, string> => {
    const secret = docs.find((d) => d.kind === "Secret" && d.metadata.name === name) as Loose;
    return Object.fromEntries(Object.entries(secret.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
  };

  it("runs each domain's Postgres as a CloudNativePG cluster of three on three nodes, a commit held by a standby too, its service and migrations on the primary's Service", () => {
    for (const d of serviceDomains()) {
      const c = docs.find((x) => x.kind === "Cluster" && x.metadata.name === `vnm-${d}-db`)!;
      expect(c, d).toBeDefined();
      expect(c.spec["instances"], d).toBeGreaterThanOrEqual(2);
      expect(c.spec["instances"], d).toBe(3);
      expect(c.spec["affinity"], d).toEqual({ enablePodAntiAffinity: true, topologyKey: hostname, podAntiAffinityType: "required" });
      expect(c.spec["postgresql"].synchronous, d).toEqual({ method: "any", number: 1, dataDurability: "required" });
      expect(c.spec["enablePDB"], d).toBe(true);
      // The service's Secret: its own role on the database initdb makes, through <cluster>-rw;
      // the migrations as that database's owner, given CREATEROLE and no more, whose password
      // the cluster's own Secret holds. No superuser logs in.
      const container = docs.find((x) => x.kind === "Deployment" && x.metadata.name === `vnm-${d}`)!.spec["template"].spec;
      const own = secretValues(container.containers[0].env.find((e: Loose) => e.name === "DATABASE_URL").valueFrom.secretKeyRef.name);
      const url = new URL(own["DATABASE_URL"]!);
      const admin = new URL(own["VNM_DATABASE_ADMIN_URL"]!);
      expect([url.hostname, url.port, url.pathname, url.username], d).toEqual([`vnm-${d}-db-rw`, "5432", `/${c.spec["bootstrap"].initdb.database}`, `vnm_${d}`]);
      const initdb = c.spec["bootstrap"].initdb;
      expect([admin.hostname, admin.pathname, admin.username], d).toEqual([`vnm-${d}-db-rw`, url.pathname, initdb.owner]);
      expect(initdb.postInitApplicationSQL, d).toEqual([`ALTER ROLE ${initdb.owner} CREATEROLE`]);
      const owner = docs.find((x) => x.kind === "Secret" && x.metadata.name === initdb.secret.name) as Loose;
      expect(owner.type, d).toBe("kubernetes.io/basic-auth");
      expect(c.spec["enableSuperuserAccess"], d).toBe(false);
      expect(secretValues(owner.metadata.name), d).toEqual({ username: initdb.owner, password: decodeURIComponent(admin.password) });
      // Only the migrations hold the administrator's URL, never the service.
      expect(container.containers[0].env.map((e: Loose) => e.name)).not.toContain("VNM_DATABASE_ADMIN_URL");
    }
    expect(docs.some((x) => x.kind === "StatefulSet" && x.metadata.name.endsWith("-db"))).toBe(false);
  });

  it("runs NATS as three servers on three nodes, routed to each other, JetStream on each server's volume, and keeps every stream three times", () => {
    const nats = docs.find((x) => x.kind === "StatefulSet" && x.metadata.name === "nats")!;
    const bus = Number((docs.find((x) => x.kind === "ConfigMap" && x.metadata.name.startsWith("vnm-config")) as Loose).data["VNM_BUS_REPLICAS"]);
    expect(nats.spec["replicas"]).toBe(3);
    expect(bus).toBe(3);
    const anti = nats.spec["template"].spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
    expect(anti).toHaveLength(1);
    expect(anti[0].topologyKey).toBe(hostname);
    expect(picks(anti[0].labelSelector, nats.spec["template"].metadata.labels)).toBe(true);
    expect(nats.spec["volumeClaimTemplates"].map((v: Loose) => v.metadata.name)).toContain("data");
    expect(nats.spec["template"].spec.containers[0].volumeMounts).toContainEqual({ name: "data", mountPath: "/data" });
    const conf = (docs.find((x) => x.kind === "ConfigMap" && x.metadata.name.startsWith("nats-config")) as Loose).data["nats.conf"] as string;
    expect(conf).toMatch(/store_dir: \/data\/jetstream/);
    for (const i of [0, 1, 2]) expect(conf).toContain(`nats://nats-${i}.nats:6222`);
    // The routes are open between the servers only; clients on 4222, monitoring on 8222.
    expect(peersOn("nats", "ingress", 6222)).toEqual(["nats"]);
    expect(peersOn("nats", "egress", 6222)).toEqual(["nats"]);
    expect(peersOn("nats", "ingress", 8222, [monitoring])).toEqual([]);
    expect(docs.some((x) => x.kind === "PodDisruptionBudget" && x.metadata.name === "nats" && x.spec["maxUnavailable"] === 1)).toBe(true);
  });

  it("spreads the gateways' and each service's replicas over the nodes (two share a node only once every node has one), each with a disruption budget", () => {
    const deployments = docs.filter((d) => d.kind === "Deployment" && d.metadata.name.startsWith("vnm-"));
    for (const d of deployments) {
      const template = d.spec["template"];
      expect(template.spec.topologySpreadConstraints, d.metadata.name).toEqual([
        { maxSkew: 1, topologyKey: hostname, whenUnsatisfiable: "DoNotSchedule", labelSelector: { matchLabels: { "app.kubernetes.io/name": d.metadata.name } }, matchLabelKeys: ["pod-template-hash"] },
      ]);
      // The constraint counts this workload's pods and no other's.
      expect(picked(template.spec.topologySpreadConstraints[0].labelSelector), d.metadata.name).toEqual([d.metadata.name]);
      expect(d.spec["replicas"], d.metadata.name).toBe(3);
      const budget = docs.find((x) => x.kind === "PodDisruptionBudget" && x.metadata.name === d.metadata.name)!;
      expect(budget.spec["maxUnavailable"], d.metadata.name).toBe(1);
      expect(picks(budget.spec["selector"], template.metadata.labels), d.metadata.name).toBe(true);
    }
    expect(deployments).toHaveLength(1 + serviceDomains().length);
  });

  it("keeps one Redis, rescheduled soon after its node is lost, and lets the database instances reach only what an overlay adds beyond the namespace (the API server)", () => {
    const redis = docs.find((x) => x.kind === "Deployment" && x.metadata.name === "redis")!;
    expect(redis.spec["replicas"]).toBe(1);
    for (const key of ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]) {
      expect(redis.spec["template"].spec.tolerations).toContainEqual({ key, operator: "Exists", effect: "NoExecute", tolerationSeconds: 30 });
    }
    expect(policy("vnm-databases-api-server")).toEqual({
      podSelector: { matchExpressions: [{ key: "cnpg.io/cluster", operator: "In", values: serviceDomains().map((d) => `vnm-${d}-db`) }] },
      policyTypes: ["Egress"],
      egress: [],
    });
  });
});
