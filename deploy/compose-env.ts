// `node deploy/compose-env.ts`: the passwords docker-compose.yml reads from .env, generated once:
// the Postgres administrator's (VNM_DATABASE_ADMIN_PASSWORD), each service role's
// (VNM_DB_PASSWORD_<DOMAIN>) and each NATS user's (VNM_NATS_PASSWORD_<USER>, deploy/nats.conf).
// Lines already in .env are kept; only missing variables are added.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { natsPasswordVariable, ROOT, serviceDomains } from "@vnm/kit/repo";

/**
 * A password that is safe everywhere it goes: in a URL's user part, and as a value of the NATS
 * configuration, which reads the variable as a configuration value (a letter first, then
 * letters and digits, stays a string).
 */
export function composePassword(): string {
  return `p${randomBytes(16).toString("hex")}`;
}

/** Every variable compose needs a generated password for. */
export function composePasswordVariables(): string[] {
  const domains = serviceDomains();
  return [
    "VNM_DATABASE_ADMIN_PASSWORD",
    ...domains.map((d) => `VNM_DB_PASSWORD_${d.toUpperCase()}`),
    ...["admin", "gateway", ...domains].map(natsPasswordVariable),
  ];
}

if (import.meta.main) {
  const file = join(ROOT, ".env");
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const have = new Set(text.split("\n").map((l) => l.split("=")[0]!.trim()));
  const added = composePasswordVariables().filter((v) => !have.has(v));
  const lines = added.map((v) => `${v}=${composePassword()}`);
  writeFileSync(file, `${text}${text && !text.endsWith("\n") ? "\n" : ""}${lines.map((l) => `${l}\n`).join("")}`, { mode: 0o600 });
  process.stdout.write(`.env: ${added.length} password(s) added, ${composePasswordVariables().length - added.length} kept\n`);
}
