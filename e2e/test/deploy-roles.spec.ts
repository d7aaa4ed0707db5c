// The deployments give each service its own Postgres role and NATS user (docs/security.md,
// "Databases" and "Bus"): docker-compose.yml runs each service's migrations step with the
// administrator's URL before it, and the service without it; deploy/nats.conf has a user per
// part, each domain publishing only its own subjects, and every password compose must supply.
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { countedKinds, loadCatalog, roleName } from "@vnm/kit";
import { natsPasswordVariable, ROOT, serviceDomains } from "@vnm/kit/repo";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { composeEnv, composePassword, composePasswordVariables, composeSecretVariables } from "../../deploy/compose-env.ts";

// biome-ignore lint/suspicious/noExplicitAny: compose files are inspected freely
type Loose = any;
const composeText = readFileSync(join(ROOT, "docker-compose.yml"), "utf8");
const compose = parse(composeText, { merge: true }) as { services: Record<string, Loose> };
const natsConf = readFileSync(join(ROOT, "deploy", "nats.conf"), "utf8");

/** Each user's line of deploy/nats.conf and the lists after it, up to the next user. */
function natsUser(user: string): { publish: string[]; subscribe: string[] } {
  const block = natsConf.split(/\n\s*\{ user: /).find((b) => b.startsWith(`${user},`)) ?? "";
  // A list may run over several lines (one consumer's subjects a line).
  const list = (what: string) => JSON.parse(new RegExp(`${what}: \\{ allow: (\\[[\\s\\S]*?\\])`).exec(block)?.[1] ?? "[]") as string[];
  return { publish: list("publish"), subscribe: list("subscribe") };
}

describe("docker-compose.yml", () => {
  it("runs each service as its own role, made by its one-shot migrations step that alone holds the administrator's URL", () => {
    for (const d of serviceDomains()) {
      const s = compose.services[d];
      const step = compose.services[`${d}-migrate`];
      expect(new URL(s.environment.DATABASE_URL.replace(/\$\{[^}]+\}/, "pw")).username, d).toBe(roleName("postgres://postgres/vnm", d));
      expect(s.environment.VNM_DATABASE_ADMIN_URL, d).toBeUndefined();
      expect(step.command).toEqual([d, "--migrate-only"]);
      expect(step.environment.DATABASE_URL).toBe(s.environment.DATABASE_URL);
      expect(step.environment.VNM_DATABASE_ADMIN_URL).toMatch(/^postgres:\/\/vnm:/);
      expect(s.depends_on[`${d}-migrate`]).toEqual({ condition: "service_completed_successfully" });
      expect(s.environment.VNM_NATS_USER).toBe(d);
    }
    expect(compose.services["gateway"].environment.VNM_NATS_USER).toBe("gateway");
    expect(compose.services["gateway"].environment.DATABASE_URL).toBeUndefined();
  });

  it("starts NATS with deploy/nats.conf and every password it reads; every generated password is one compose asks for", () => {
    const nats = compose.services["nats"];
    expect(nats.command.slice(0, 2)).toEqual(["-c", "/etc/nats/nats.conf"]);
    expect(nats.volumes).toContain("./deploy/nats.conf:/etc/nats/nats.conf:ro");
    const read = [...natsConf.matchAll(/password: \$(\w+)/g)].map((m) => m[1]);
    expect(Object.keys(nats.environment).sort()).toEqual(read.sort());
    const asked = new Set([...composeText.matchAll(/\$\{(\w+):\?run node deploy\/compose-env\.ts\}/g)].map((m) => m[1]));
    expect([...asked].sort()).toEqual(composeSecretVariables().sort());
  });
});

describe("deploy/compose-env.ts", () => {
  it("adds the missing secrets, keeps the others, and makes identity's list from the credentials in the file", () => {
    const first = composeEnv("VNM_DATABASE_ADMIN_PASSWORD=kept\n");
    expect(first.added).toBe(composePasswordVariables().length - 1);
    const values = new Map(first.text.trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
    expect(values.get("VNM_DATABASE_ADMIN_PASSWORD")).toBe("kept");
    expect([...values.keys()].sort()).toEqual(composeSecretVariables().sort());
    const bridge = createHash("sha256").update(values.get("VNM_BRIDGE_CREDENTIAL")!).digest("hex");
    expect(values.get("VNM_SERVICE_CLIENTS")).toContain(`bridge:${bridge}`);
    expect(values.get("VNM_SERVICE_CLIENTS")).not.toContain("identity:");
    // Run again: nothing added, nothing changed.
    expect(composeEnv(first.text)).toEqual({ text: first.text, added: 0 });
  });
});

describe("deploy/nats.conf", () => {
  it("is valid with generated passwords, and refuses anonymous connections (no no_auth_user)", () => {
    const env = Object.fromEntries(composePasswordVariables().map((v) => [v, composePassword()]));
    const check = spawnSync("/usr/sbin/nats-server", ["-c", join(ROOT, "deploy", "nats.conf"), "-t"], { env: { ...process.env, ...env }, encoding: "utf8" });
    expect(check.stdout + check.stderr).toMatch(/configuration file .* is valid/);
    expect(check.status).toBe(0);
    expect(natsConf).not.toMatch(/no_auth_user/);
  });

  /**
   * Other domains' changes a service subscribes to (not durable consumers, which have their own
   * JetStream subjects): the tunnel service reconciles its devices when what they hold changes.
   */
  const HEARD: Record<string, string[]> = {
    tunnel: ["vnm.bridge.MacPort.*", "vnm.bridge.Ip4MacPair.*", "vnm.routing.HostInterfacePort.*"],
  };

  it("has a user per part: each domain publishes only its own changes' subjects and hears only what it consumes", () => {
    const counted = new Set(countedKinds(loadCatalog()).map((c) => c.domain));
    for (const d of serviceDomains()) {
      const { publish, subscribe } = natsUser(d);
      expect(natsConf, d).toContain(`password: $${natsPasswordVariable(d)}`);
      expect(publish.filter((s) => s.startsWith("vnm")), d).toEqual([`vnm.${d}.>`]);
      expect(publish.filter((s) => /^\$JS\.API\.STREAM\.(DELETE|PURGE|UPDATE|MSG)/.test(s)), d).toEqual([]);
      expect(subscribe, d).toContain(`_INBOX_${d}.>`);
      // Of other domains' changes it hears only the identity service's user changes (every part
      // checks tokens' revocation), where it holds kinds a tenant creates the quota service's
      // quota changes (its cached limits), and what it follows by name (HEARD).
      expect(subscribe).toContain("vnm.identity.User.*");
      const quotas = counted.has(d) ? ["vnm.quota.Quota.updated"] : [];
      expect(subscribe.filter((s) => s.startsWith("vnm.") && !s.startsWith(`vnm.${d}.`) && s !== "vnm.identity.User.*"), d).toEqual([...(HEARD[d] ?? []), ...quotas]);
    }
    expect(natsUser("gateway").publish.filter((s) => s.startsWith("vnm"))).toEqual(["vnm-audit.>"]);
  });
});
