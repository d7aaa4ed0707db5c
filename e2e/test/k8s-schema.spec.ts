// The strict schema check of rendered manifests (k8s-schema.ts) refuses what an API server with
// strict field validation refuses, and says what and where: it is not a check any object passes.
import { describe, expect, it } from "vitest";
import { strictProblems } from "./k8s-schema.ts";

const policy = (spec: object) => ({ apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: "p" }, spec });
const selector = { matchLabels: { "app.kubernetes.io/name": "vnm-gateway" } };
const deployment = (container: object, spec: object = {}) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "d" },
  spec: { replicas: 2, selector, template: { metadata: { labels: selector.matchLabels }, spec: { containers: [{ name: "c", image: "vnm", ...container }] } }, ...spec },
});

describe("strict Kubernetes schema check", () => {
  it("passes objects that are valid for their kind", () => {
    expect(strictProblems([policy({ podSelector: selector, policyTypes: ["Ingress"], ingress: [{ from: [{ podSelector: selector }], ports: [{ protocol: "TCP", port: 8080 }] }] })])).toEqual([]);
    expect(strictProblems([deployment({ ports: [{ name: "grpc", containerPort: 50051 }] })])).toEqual([]);
    expect(strictProblems([{ apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, type: "Opaque", data: { A: "YQ==" } }])).toEqual([]);
  });

  it("refuses a peer where a label selector belongs (the malformed NetworkPolicies of issue 49)", () => {
    expect(strictProblems([policy({ podSelector: { podSelector: selector } })])).toEqual(['NetworkPolicy/p: /spec/podSelector: unknown field "podSelector"']);
  });

  it("refuses an unknown field at any depth, a missing required field and a value of the wrong type", () => {
    expect(strictProblems([deployment({ imagePullPolicyy: "Always" })])).toEqual(['Deployment/d: /spec/template/spec/containers/0: unknown field "imagePullPolicyy"']);
    expect(strictProblems([deployment({}, { selector: undefined })])).toEqual(['Deployment/d: /spec: missing required field "selector"']);
    expect(strictProblems([deployment({}, { replicas: "3" })])).toEqual(["Deployment/d: /spec/replicas: must be number"]);
    expect(strictProblems([{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { a: 1 } }])).toEqual(["ConfigMap/c: /data/a: must be string"]);
    expect(strictProblems([{ apiVersion: "v1", kind: "ConfigMap", data: {} }])).toEqual(['ConfigMap/undefined: /: missing required field "metadata"']);
  });

  it("checks a CloudNativePG Cluster against the schema written for it, as strictly: unknown fields, wrong values and Kubernetes types inside it", () => {
    const cluster = (spec: object, metadata: object = { name: "db" }) => ({ apiVersion: "postgresql.cnpg.io/v1", kind: "Cluster", metadata, spec });
    const valid = {
      instances: 3,
      bootstrap: { initdb: { database: "vnm", owner: "vnm", secret: { name: "db" }, postInitApplicationSQL: ["ALTER ROLE vnm CREATEROLE"] } },
      postgresql: { synchronous: { method: "any", number: 1, dataDurability: "required" } },
      affinity: { enablePodAntiAffinity: true, topologyKey: "kubernetes.io/hostname", podAntiAffinityType: "required" },
      resources: { requests: { cpu: "250m", memory: "512Mi" } },
      storage: { size: "20Gi" },
    };
    expect(strictProblems([cluster(valid)])).toEqual([]);
    expect(strictProblems([cluster({ ...valid, affinity: { ...valid.affinity, podAntiAffinityTyp: "required" } })])).toEqual(['Cluster/db: /spec/affinity: unknown field "podAntiAffinityTyp"']);
    expect(strictProblems([cluster({ ...valid, affinity: { ...valid.affinity, podAntiAffinityType: "always" } })])).toEqual(['Cluster/db: /spec/affinity/podAntiAffinityType: must be equal to one of the allowed values ["preferred","required"]']);
    expect(strictProblems([cluster({ ...valid, postgresql: { synchronous: { number: 1 } } })])).toEqual(['Cluster/db: /spec/postgresql/synchronous: missing required field "method"']);
    expect(strictProblems([cluster({ ...valid, instances: "3" })])).toEqual(["Cluster/db: /spec/instances: must be integer"]);
    expect(strictProblems([cluster({ storage: valid.storage })])).toEqual(['Cluster/db: /spec: missing required field "instances"']);
    // Kubernetes types inside it are checked as in a built-in kind.
    expect(strictProblems([cluster({ ...valid, resources: { request: { cpu: "1" } } })])).toEqual(['Cluster/db: /spec/resources: unknown field "request"']);
    expect(strictProblems([cluster(valid, { name: "db", label: {} })])).toEqual(['Cluster/db: /metadata: unknown field "label"']);
    expect(strictProblems([{ ...cluster(valid), apiVersion: "postgresql.cnpg.io/v2" }])[0]).toMatch(/^Cluster\/db: no Kubernetes schema/);
  });

  it("refuses a kind without a schema (a custom resource) and a kind under another group's apiVersion, naming them", () => {
    expect(strictProblems([{ apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor", metadata: { name: "m" }, spec: {} }])).toEqual([
      'ServiceMonitor/m: no Kubernetes schema for apiVersion "monitoring.coreos.com/v1", kind "ServiceMonitor" (a custom resource needs a schema of its own here)',
    ]);
    expect(strictProblems([{ apiVersion: "apps/v1", kind: "NetworkPolicy", metadata: { name: "n" }, spec: {} }])[0]).toMatch(/^NetworkPolicy\/n: no Kubernetes schema/);
    expect(strictProblems([{ apiVersion: "networking.example.com/v1", kind: "NetworkPolicy", metadata: { name: "n" }, spec: { podSelector: {} } }])).toEqual([
      'NetworkPolicy/n: /apiVersion: must be equal to constant "networking.k8s.io/v1"',
    ]);
    expect(strictProblems([{ kind: "Pod", metadata: { name: "x" } }])).toEqual(["Pod/x: no apiVersion or kind"]);
  });
});
