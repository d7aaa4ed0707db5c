// The strict schema check of rendered manifests (k8s-schema.ts) refuses what an API server with
// strict field validation refuses, and says what and where: it is not a check any object passes.
// So do the published validators' checks of values (modelProblems).
import { describe, expect, it } from "vitest";
import { modelProblems, strictProblems } from "./k8s-schema.ts";

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

  it("reads values as the published validators do (kubernetes-models for a built-in kind), which leave objects open", async () => {
    const secret = (data: object) => ({ apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, type: "Opaque", data });
    expect(await modelProblems([secret({ A: "YQ==" }), deployment({ resources: { limits: { memory: "2Gi" } } })])).toEqual([]);
    // kustomize's wrapping of a long value's base64 is read as the API server reads it.
    expect(await modelProblems([secret({ A: "YWFh\nYQ==" })])).toEqual([]);
    expect(await modelProblems([secret({ A: "not base64" })])).toEqual(['Secret/s: /data/A: must match format "byte"']);
    // A quantity is a number or a string of its format (ajv names each branch of the oneOf).
    const [quantity, ...others] = await modelProblems([deployment({ resources: { limits: { memory: "2 GB" } } })]);
    expect(others).toEqual([]);
    expect(quantity).toMatch(/^Deployment\/d: .*\/spec\/template\/spec\/containers\/0\/resources\/limits\/memory: must match format "quantity"/);
    expect(await modelProblems([deployment({ imagePullPolicyy: "Always" })])).toEqual([]);
    expect(await modelProblems([{ apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor", metadata: { name: "m" } }])).toEqual([
      'ServiceMonitor/m: no model of apiVersion "monitoring.coreos.com/v1", kind "ServiceMonitor"',
    ]);
  });

  describe("a CloudNativePG Cluster, against the operator's own API types (@kubernetes-models/cloudnative-pg)", () => {
    const cluster = (spec: object, metadata: object = { name: "db" }) => ({ apiVersion: "postgresql.cnpg.io/v1", kind: "Cluster", metadata, spec });
    const valid = {
      instances: 3,
      bootstrap: { initdb: { database: "vnm", owner: "vnm", secret: { name: "db" }, postInitApplicationSQL: ["ALTER ROLE vnm CREATEROLE"] } },
      postgresql: { synchronous: { method: "any", number: 1, dataDurability: "required" } },
      affinity: { enablePodAntiAffinity: true, topologyKey: "kubernetes.io/hostname", podAntiAffinityType: "required" },
      resources: { requests: { cpu: "250m", memory: "512Mi" } },
      storage: { size: "20Gi" },
    };

    it("passes a valid one, fields vnm does not set included", async () => {
      expect(strictProblems([cluster(valid)])).toEqual([]);
      expect(await modelProblems([cluster(valid)])).toEqual([]);
      // The volume's claim template and LDAP authentication: the operator's, and nothing vnm writes.
      const more = {
        ...valid,
        storage: { pvcTemplate: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "20Gi" } }, storageClassName: "ssd" } },
        postgresql: { ...valid.postgresql, ldap: { server: "ldap.example", bindSearchAuth: { baseDN: "dc=example", searchAttribute: "uid" } } },
      };
      expect(strictProblems([cluster(more)])).toEqual([]);
      expect(await modelProblems([cluster(more)])).toEqual([]);
    });

    it("refuses an unknown field at any depth, a missing required field and a value of the wrong type", () => {
      expect(strictProblems([cluster({ ...valid, affinity: { ...valid.affinity, podAntiAffinityTyp: "required" } })])).toEqual(['Cluster/db: /spec/affinity: unknown field "podAntiAffinityTyp"']);
      expect(strictProblems([cluster({ ...valid, storage: { pvcTemplate: { resources: { requests: { storage: "20Gi" } }, storageClass: "ssd" } } })])).toEqual([
        'Cluster/db: /spec/storage/pvcTemplate: unknown field "storageClass"',
      ]);
      expect(strictProblems([cluster({ ...valid, postgresql: { ldap: { server: "ldap.example", bindSearchAuth: { baseDN: "dc=example", searchAtribute: "uid" } } } })])).toEqual([
        'Cluster/db: /spec/postgresql/ldap/bindSearchAuth: unknown field "searchAtribute"',
      ]);
      expect(strictProblems([cluster({ ...valid, postgresql: { synchronous: { number: 1 } } })])).toEqual(['Cluster/db: /spec/postgresql/synchronous: missing required field "method"']);
      expect(strictProblems([cluster({ storage: valid.storage })])).toEqual(['Cluster/db: /spec: missing required field "instances"']);
      expect(strictProblems([cluster({ ...valid, instances: "3" })])).toEqual(["Cluster/db: /spec/instances: must be number"]);
      expect(strictProblems([{ ...cluster(valid), metadata: undefined }])).toEqual(['Cluster/undefined: /: missing required field "metadata"']);
      // Kubernetes types inside it are checked as in a built-in kind.
      expect(strictProblems([cluster({ ...valid, resources: { request: { cpu: "1" } } })])).toEqual(['Cluster/db: /spec/resources: unknown field "request"']);
      expect(strictProblems([cluster(valid, { name: "db", label: {} })])).toEqual(['Cluster/db: /metadata: unknown field "label"']);
      expect(strictProblems([{ ...cluster(valid), apiVersion: "postgresql.cnpg.io/v2" }])[0]).toMatch(/^Cluster\/db: no Kubernetes schema/);
      // A type of the package that is not a kind of its own.
      expect(strictProblems([{ ...cluster(valid), kind: "ClusterSpec" }])[0]).toMatch(/^ClusterSpec\/db: no Kubernetes schema/);
    });

    it("refuses, by the package's own validator, a value the operator's API does not allow", async () => {
      expect(await modelProblems([cluster({ ...valid, postgresql: { synchronous: { method: "all", number: 1 } } })])).toEqual([
        'Cluster/db: /spec/postgresql/synchronous/method: must be equal to one of the allowed values ["any","first"]',
      ]);
      expect(await modelProblems([cluster({ ...valid, instances: 0 })])).toEqual(["Cluster/db: /spec/instances: must be >= 1"]);
      expect(await modelProblems([cluster({ ...valid, instances: 1.5 })])).toEqual(["Cluster/db: /spec/instances: must be integer"]);
      // The validator leaves objects open: an unknown field is strictProblems' to find.
      expect(await modelProblems([cluster({ ...valid, storage: { sise: "20Gi" } })])).toEqual([]);
    });
  });

  it("refuses a kind without a schema (a custom resource) and a kind under another group's apiVersion, naming them", () => {
    expect(strictProblems([{ apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor", metadata: { name: "m" }, spec: {} }])).toEqual([
      'ServiceMonitor/m: no Kubernetes schema for apiVersion "monitoring.coreos.com/v1", kind "ServiceMonitor" (a custom resource needs the package that declares its types here)',
    ]);
    expect(strictProblems([{ apiVersion: "apps/v1", kind: "NetworkPolicy", metadata: { name: "n" }, spec: {} }])[0]).toMatch(/^NetworkPolicy\/n: no Kubernetes schema/);
    expect(strictProblems([{ apiVersion: "networking.example.com/v1", kind: "NetworkPolicy", metadata: { name: "n" }, spec: { podSelector: {} } }])).toEqual([
      'NetworkPolicy/n: /apiVersion: must be equal to constant "networking.k8s.io/v1"',
    ]);
    expect(strictProblems([{ kind: "Pod", metadata: { name: "x" } }])).toEqual(["Pod/x: no apiVersion or kind"]);
  });
});
