// `node deploy/compose-env.ts`: the secrets docker-compose.yml reads from .env, generated once:
// the Postgres administrator's password (VNM_DATABASE_ADMIN_PASSWORD), each service role's
// (VNM_DB_PASSWORD_<DOMAIN>), each NATS user's (VNM_NATS_PASSWORD_<USER>, deploy/nats.conf),
// each part's client credential (VNM_<PART>_CREDENTIAL: every part but identity, which signs its
// own token) and identity's list of their hashes (VNM_SERVICE_CLIENTS, always made again from the
// credentials in the file). Lines already in .env are kept; missing secrets are added, so
// deleting a line and running it again replaces that one secret.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { credentialParts, natsPasswordVariable, ROOT, serviceClients, serviceDomains } from "@vnm/kit/repo";

/**
 * A secret that is safe everywhere it goes: in a URL's user part, and as a value of the NATS
 * configuration, which reads the variable as a configuration value (a letter first, then
 * letters and digits, stays a string).
 */
export function composePassword(): string {
  return `p${randomBytes(16).toString("hex")}`;
}

const credentialVariable = (part: string) => `VNM_${part.toUpperCase()}_CREDENTIAL`;

/** Every variable compose needs a generated secret for. */
export function composePasswordVariables(): string[] {
  const domains = serviceDomains();
  return [
    "VNM_DATABASE_ADMIN_PASSWORD",
    ...domains.map((d) => `VNM_DB_PASSWORD_${d.toUpperCase()}`),
    ...["admin", "gateway", ...domains].map(natsPasswordVariable),
    ...credentialParts().map(credentialVariable),
  ];
}

/** Every variable compose reads that this script writes: the secrets and identity's list of credential hashes. */
export function composeSecretVariables(): string[] {
  return [...composePasswordVariables(), "VNM_SERVICE_CLIENTS"];
}

/** .env's text with the missing secrets added and VNM_SERVICE_CLIENTS made from its credentials. */
export function composeEnv(text: string): { text: string; added: number } {
  const lines = text.split("\n").filter((l) => l !== "" && !l.startsWith("VNM_SERVICE_CLIENTS="));
  const values = new Map(lines.map((l) => [l.split("=")[0]!.trim(), l.slice(l.indexOf("=") + 1)]));
  const added = composePasswordVariables().filter((v) => !values.has(v));
  for (const v of added) values.set(v, composePassword());
  const credentials = new Map(credentialParts().map((p) => [p, values.get(credentialVariable(p))!]));
  const out = [...lines, ...added.map((v) => `${v}=${values.get(v)}`), `VNM_SERVICE_CLIENTS=${serviceClients(credentials)}`];
  return { text: `${out.join("\n")}\n`, added: added.length };
}

if (import.meta.main) {
  const file = join(ROOT, ".env");
  const { text, added } = composeEnv(existsSync(file) ? readFileSync(file, "utf8") : "");
  writeFileSync(file, text, { mode: 0o600 });
  process.stdout.write(`.env: ${added} secret(s) added, ${composePasswordVariables().length - added} kept; VNM_SERVICE_CLIENTS made from the credentials\n`);
}
