// Writes deploy/k8s/base/services.yaml: for every service of services/ a Deployment (the one
// image with the domain as argument, its migrations as an init container, gRPC health probes,
// two replicas), a headless Service (the gateway's
// round-robin channel reaches every pod) and a HorizontalPodAutoscaler, so each domain scales on
// its own; and the gateway's address variables for them. Derived, never hand-copied: a test
// checks the committed file is what this writes (`node deploy/k8s/generate.ts` refreshes it).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { addressVariable, ROOT, serviceDomains } from "@vnm/kit/repo";
import { stringify } from "yaml";
import { databaseUrlKey, databasesYaml } from "./databases.ts";

const GRPC_PORT = 50051;
const METRICS_PORT = 9464;
const labels = (name: string) => ({ "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "vnm" });

/** Every service's address, as the gateway and the services reach each other. */
export function addresses(): { name: string; value: string }[] {
  return serviceDomains().map((d) => ({ name: addressVariable(d), value: `vnm-${d}:${GRPC_PORT}` }));
}

function deployment(domain: string) {
  const name = `vnm-${domain}`;
  const probe = { grpc: { port: GRPC_PORT }, periodSeconds: 5, failureThreshold: 3 };
  const env = [
    { name: "GRPC_HOST", value: "0.0.0.0" },
    { name: "GRPC_PORT", value: String(GRPC_PORT) },
    { name: "VNM_METRICS_PORT", value: String(METRICS_PORT) },
    // Its own database (deploy/k8s/base/databases.yaml), whatever vnm-secrets holds besides.
    { name: "DATABASE_URL", valueFrom: { secretKeyRef: { name: "vnm-secrets", key: databaseUrlKey(domain) } } },
    ...addresses(),
  ];
  const envFrom = [{ configMapRef: { name: "vnm-config" } }, { secretRef: { name: "vnm-secrets" } }];
  const securityContext = { runAsNonRoot: true, runAsUser: 1000, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false };
  // Its schema brought up to date before it serves; many pods starting at once take turns
  // (the migrations hold an advisory lock).
  const migrate = { name: "migrate", image: "vnm", args: [domain, "--migrate-only"], env, envFrom, securityContext, resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "256Mi" } } };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels: labels(name) },
    spec: {
      replicas: 2,
      selector: { matchLabels: labels(name) },
      template: {
        metadata: { labels: labels(name), annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": String(METRICS_PORT) } },
        spec: {
          initContainers: [migrate],
          containers: [
            {
              name: domain,
              image: "vnm",
              args: [domain],
              env,
              envFrom,
              ports: [
                { name: "grpc", containerPort: GRPC_PORT },
                { name: "metrics", containerPort: METRICS_PORT },
              ],
              readinessProbe: probe,
              livenessProbe: { ...probe, initialDelaySeconds: 10 },
              resources: { requests: { cpu: "100m", memory: "192Mi" }, limits: { memory: "384Mi" } },
              securityContext,
            },
          ],
          terminationGracePeriodSeconds: 15,
        },
      },
    },
  };
}

function service(domain: string) {
  const name = `vnm-${domain}`;
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, labels: labels(name) },
    spec: { clusterIP: "None", selector: labels(name), ports: [{ name: "grpc", port: GRPC_PORT, targetPort: "grpc" }] },
  };
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

/** Only vnm's own pods (the gateway, and services calling each other) reach a service's gRPC port; Prometheus its metrics. */
function networkPolicy(domain: string) {
  const name = `vnm-${domain}`;
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name, labels: labels(name) },
    spec: {
      podSelector: { matchLabels: labels(name) },
      policyTypes: ["Ingress"],
      ingress: [
        { from: [{ podSelector: { matchLabels: { "app.kubernetes.io/part-of": "vnm" } } }], ports: [{ port: GRPC_PORT }] },
        { ports: [{ port: METRICS_PORT }] },
      ],
    },
  };
}

export function servicesYaml(): string {
  const docs = serviceDomains().flatMap((d) => [deployment(d), service(d), autoscaler(`vnm-${d}`), disruptionBudget(`vnm-${d}`), networkPolicy(d)]);
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

if (import.meta.main) {
  writeFileSync(join(ROOT, "deploy/k8s/base/services.yaml"), servicesYaml());
  writeFileSync(join(ROOT, "deploy/k8s/base/gateway-addresses.yaml"), gatewayAddressesYaml());
  writeFileSync(join(ROOT, "deploy/k8s/base/databases.yaml"), databasesYaml());
}
