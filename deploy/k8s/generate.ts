// Writes the generated part of deploy/k8s/base: services.yaml, for every service of services/
// a Deployment (the one image with the domain as argument, its migrations as an init container,
// gRPC health probes, two replicas spread over the nodes, the restricted Pod Security Standard), a headless Service (the
// gateway's round-robin channel reaches every pod), a HorizontalPodAutoscaler, so each domain
// scales on its own, and a PodDisruptionBudget; the gateway's address variables for them; the
// databases (CloudNativePG clusters, databases.ts); the NetworkPolicies and NATS's users (network.ts); a Secret per workload
// (secrets.ts). Derived, never hand-copied: a test checks the committed files are what this
// writes (`node deploy/k8s/generate.ts` refreshes them).
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { addressVariable, ROOT, serviceDomains } from "@vnm/kit/repo";
import { stringify } from "yaml";
import { databasesYaml } from "./databases.ts";
import { GRPC_PORT, METRICS_PORT, natsAuthYaml, networkYaml } from "./network.ts";
import { fromSecret, GRACE_SECONDS, headlessService, labels, PRE_STOP, restrictedContainer, restrictedPod, ROLLING_UPDATE, spreadOverNodes } from "./objects.ts";
import { secretFiles, workload } from "./secrets.ts";

/** Every service's address, as the gateway and the services reach each other. */
export function addresses(): { name: string; value: string }[] {
  return serviceDomains().map((d) => ({ name: addressVariable(d), value: `vnm-${d}:${GRPC_PORT}` }));
}

/** A domain service's environment: its ports, its NATS user, its own Secret's values, every address. */
function serviceEnv(domain: string) {
  const name = workload(domain);
  const credentials = domain === "identity" ? ["VNM_SERVICE_CLIENTS", "VNM_ADMIN_PASSWORD"] : ["VNM_SERVICE_CREDENTIAL"];
  return [
    { name: "GRPC_HOST", value: "0.0.0.0" },
    { name: "GRPC_PORT", value: String(GRPC_PORT) },
    { name: "VNM_METRICS_PORT", value: String(METRICS_PORT) },
    { name: "VNM_NATS_USER", value: domain },
    fromSecret("VNM_NATS_PASSWORD", name),
    // Its own login role, owning only its schema, on its database cluster's primary (deploy/k8s/base/databases.yaml).
    fromSecret("DATABASE_URL", name),
    ...credentials.map((key) => fromSecret(key, name)),
    ...addresses(),
  ];
}

/**
 * The migrations, before the service starts: the same image run as `<domain> --migrate-only` with the
 * database's administrator (VNM_DATABASE_ADMIN_URL, which the service itself never holds) and
 * the login role it sets up (DATABASE_URL). Pods starting at once take turns (advisory lock).
 */
function migrations(domain: string, volumeMounts: object[]) {
  const name = workload(domain);
  return {
    name: "migrate",
    image: "vnm",
    args: [domain, "--migrate-only"],
    env: [fromSecret("VNM_DATABASE_ADMIN_URL", name), fromSecret("DATABASE_URL", name)],
    envFrom: [{ configMapRef: { name: "vnm-config" } }],
    securityContext: restrictedContainer,
    volumeMounts,
    resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "256Mi" } },
  };
}

function deployment(domain: string) {
  const name = workload(domain);
  const probe = { grpc: { port: GRPC_PORT }, periodSeconds: 5, failureThreshold: 3 };
  // The root file system is read-only; /tmp is the one place a process may write.
  const volumeMounts = [{ name: "tmp", mountPath: "/tmp" }];
  const container = {
    name: domain,
    image: "vnm",
    args: [domain],
    env: serviceEnv(domain),
    envFrom: [{ configMapRef: { name: "vnm-config" } }],
    ports: [
      { name: "grpc", containerPort: GRPC_PORT },
      { name: "metrics", containerPort: METRICS_PORT },
    ],
    readinessProbe: probe,
    livenessProbe: { ...probe, initialDelaySeconds: 10 },
    resources: { requests: { cpu: "100m", memory: "192Mi" }, limits: { memory: "384Mi" } },
    securityContext: restrictedContainer,
    volumeMounts,
    lifecycle: PRE_STOP,
  };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels: labels(name) },
    spec: {
      replicas: 2,
      strategy: ROLLING_UPDATE,
      selector: { matchLabels: labels(name) },
      template: {
        metadata: { labels: labels(name), annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": String(METRICS_PORT) } },
        spec: {
          ...restrictedPod(1000),
          topologySpreadConstraints: spreadOverNodes(name),
          initContainers: [migrations(domain, volumeMounts)],
          containers: [container],
          volumes: [{ name: "tmp", emptyDir: {} }],
          terminationGracePeriodSeconds: GRACE_SECONDS,
        },
      },
    },
  };
}

function service(domain: string) {
  return headlessService(`vnm-${domain}`, { name: "grpc", port: GRPC_PORT });
}

export function autoscaler(name: string) {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, labels: labels(name) },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 2,
      maxReplicas: 10,
      metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } } }],
    },
  };
}

/** At most one pod of a Deployment down at a time for voluntary disruptions (node drains). */
export function disruptionBudget(name: string) {
  return { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name, labels: labels(name) }, spec: { maxUnavailable: 1, selector: { matchLabels: labels(name) } } };
}

export function servicesYaml(): string {
  const docs = serviceDomains().flatMap((d) => [deployment(d), service(d), autoscaler(`vnm-${d}`), disruptionBudget(`vnm-${d}`)]);
  const head = "# Generated by deploy/k8s/generate.ts from services/: do not edit.\n";
  return head + docs.map((d) => stringify(d)).join("---\n");
}

export function gatewayAddressesYaml(): string {
  const patch = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "vnm-gateway" },
    spec: { template: { spec: { containers: [{ name: "gateway", env: addresses() }] } } },
  };
  return `# Generated by deploy/k8s/generate.ts from services/: do not edit.\n${stringify(patch)}`;
}

/** Every generated file below deploy/k8s/base, by path. */
export function generatedFiles(): Record<string, string> {
  const files: Record<string, string> = {
    "services.yaml": servicesYaml(),
    "gateway-addresses.yaml": gatewayAddressesYaml(),
    "databases.yaml": databasesYaml(),
    "network.yaml": networkYaml(),
    "infra/nats-auth.yaml": natsAuthYaml(),
  };
  for (const [file, text] of Object.entries(secretFiles())) files[`secrets/${file}`] = text;
  return files;
}

if (import.meta.main) {
  const base = join(ROOT, "deploy/k8s/base");
  // The secrets folder holds only what is generated: a Secret no longer rendered goes.
  for (const f of readdirSync(join(base, "secrets"), { withFileTypes: true })) if (f.isFile()) rmSync(join(base, "secrets", f.name));
  mkdirSync(join(base, "secrets"), { recursive: true });
  for (const [file, text] of Object.entries(generatedFiles())) writeFileSync(join(base, file), text);
}
