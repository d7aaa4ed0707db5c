// The shapes every generated manifest shares: labels, a headless Service, an ingress policy.

/** The labels of one vnm process (or its database): its name, and the system it is part of. */
export const labels = (name: string) => ({ "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "vnm" });

/** A headless Service (no cluster IP): clients resolve every ready pod and spread over them. */
export function headlessService(name: string, port: { name: string; port: number }) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, labels: labels(name) },
    spec: { clusterIP: "None", selector: labels(name), ports: [{ name: port.name, port: port.port, targetPort: port.name }] },
  };
}

/** Ingress to the pods of `name` only as `ingress` lists (everything else is refused). */
export function ingressPolicy(name: string, ingress: unknown[]) {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name, labels: labels(name) },
    spec: { podSelector: { matchLabels: labels(name) }, policyTypes: ["Ingress"], ingress },
  };
}
