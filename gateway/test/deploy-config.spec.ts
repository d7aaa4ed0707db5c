// The gateway's settings in the rendered Kubernetes manifests are ones it starts with: a value its
// configuration refuses (VNM_TRUST_PROXY=true, say, which it stops on) would crash-loop every pod.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "@vnm/kit/testing";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { gatewayConfig } from "../src/index.ts";

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: unknown;
}

describe("the gateway's environment in the Kubernetes manifests", () => {
  for (const overlay of ["base", "overlays/dev", "overlays/production"]) {
    it(`${overlay}: the gateway accepts every setting it is given`, () => {
      const rendered = execFileSync("kubectl", ["kustomize", join(ROOT, "deploy/k8s", overlay)], { encoding: "utf8" });
      const docs = parseAllDocuments(rendered).map((d) => d.toJSON() as { kind: string; metadata: { name: string }; spec?: { template?: { spec?: { containers?: { name: string; env?: EnvVar[] }[] } } } });
      const gateway = docs.find((d) => d.kind === "Deployment" && d.metadata.name === "vnm-gateway");
      const container = gateway?.spec?.template?.spec?.containers?.find((c) => c.name === "gateway");
      expect(container?.env?.length).toBeGreaterThan(0);
      // A value from a Secret is whatever the Secret holds: any well-formed one stands for it.
      const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value ?? "from-a-secret"]));
      expect(() => gatewayConfig(env)).not.toThrow();
      expect(env["VNM_TRUST_PROXY"]).toBe("1");
    });
  }
});
