// The shapes every generated manifest shares: labels and selectors, a headless Service, a
// NetworkPolicy, and the restricted security context every pod runs under.
import type { TopologySpreadConstraint } from "kubernetes-types/core/v1.js";
import type { LabelSelector } from "kubernetes-types/meta/v1.js";
import type { NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer } from "kubernetes-types/networking/v1.js";

/** The labels of one vnm process (or its database): its name, and the system it is part of. */
export const labels = (name: string) => ({ "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "vnm" });

/** The pods of one workload, as a label selector (a NetworkPolicy's spec.podSelector). */
export const podSelector = (name: string): LabelSelector => ({ matchLabels: { "app.kubernetes.io/name": name } });

/** The pods of one workload, as a NetworkPolicy peer (in a rule's from or to). */
export const pods = (name: string): NetworkPolicyPeer => ({ podSelector: podSelector(name) });

/** The pods of several workloads, as a NetworkPolicy peer. */
export const podsIn = (names: string[]): NetworkPolicyPeer => ({ podSelector: { matchExpressions: [{ key: "app.kubernetes.io/name", operator: "In", values: names }] } });

/**
 * A Deployment's pods spread over the nodes: a pod is placed only where the nodes' counts of its
 * version's pods then differ by one at most (maxSkew 1, DoNotSchedule), so two replicas share a
 * node only once every node has one. Counted per ReplicaSet (pod-template-hash), so a rolling
 * update's new pods spread among themselves and the surge pod is never held back by old ones.
 * Required anti-affinity would forbid sharing outright, and with it an autoscaler's replicas
 * beyond the node count and the surge pod on a cluster whose every node has one.
 */
export const spreadOverNodes = (name: string): TopologySpreadConstraint[] => [
  { maxSkew: 1, topologyKey: "kubernetes.io/hostname", whenUnsatisfiable: "DoNotSchedule", labelSelector: podSelector(name), matchLabelKeys: ["pod-template-hash"] },
];

/** A headless Service (no cluster IP): clients resolve every ready pod and spread over them. */
export function headlessService(name: string, port: { name: string; port: number }) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, labels: labels(name) },
    spec: { clusterIP: "None", selector: labels(name), ports: [{ name: port.name, port: port.port, targetPort: port.name }] },
  };
}

/**
 * A NetworkPolicy for the pods `selector` picks (a label selector, not a peer: podSelector, not
 * pods): they accept only `ingress` and send only `egress` (both kinds are listed, so an empty
 * list refuses everything of that kind). Typed by the Kubernetes API's own types, so a field out
 * of place does not compile; e2e/test/deploy.spec.ts checks the rendered objects strictly too.
 */
export function networkPolicy(name: string, selector: LabelSelector, rules: { ingress: NetworkPolicyIngressRule[]; egress: NetworkPolicyEgressRule[] }) {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name, labels: { "app.kubernetes.io/part-of": "vnm" } },
    spec: { podSelector: selector, policyTypes: ["Ingress", "Egress"], ingress: rules.ingress, egress: rules.egress },
  } satisfies NetworkPolicy;
}

/**
 * The Pod Security Standard "restricted", for a pod and its containers: a user other than root,
 * the runtime's default seccomp profile, no privilege escalation, no capabilities, a read-only
 * root file system (what must write gets an emptyDir) and no service-account token (nothing of
 * vnm talks to the Kubernetes API).
 */
export function restrictedPod(user: number) {
  return {
    automountServiceAccountToken: false,
    securityContext: { runAsNonRoot: true, runAsUser: user, runAsGroup: user, fsGroup: user, seccompProfile: { type: "RuntimeDefault" } },
  };
}

export const restrictedContainer = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ["ALL"] },
};

/** An environment variable read from one key of a Secret. */
export const fromSecret = (name: string, secret: string, key = name) => ({ name, valueFrom: { secretKeyRef: { name: secret, key } } });

/**
 * How a Deployment of the system is replaced: one pod more at a time, none taken away before its
 * replacement is ready; a stopping pod first waits 5 s (preStop: the Service's endpoints drop
 * it) and then drains within VNM_DRAIN_MS (10 s), inside a grace period of 20 s.
 */
export const ROLLING_UPDATE = { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } };
export const PRE_STOP = { preStop: { exec: { command: ["sleep", "5"] } } };
export const GRACE_SECONDS = 20;

