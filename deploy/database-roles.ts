// The migrations step's first half for `npm start`: each service's own Postgres role and schema,
// made with the administrator's URL (the embedded server's superuser, or the DATABASE_URL given
// to the launcher), which only the launcher holds. Each role's password is generated once and
// kept in .data/database-roles.json (mode 600), beside the token secret; each start sets it
// again, so a database moved or restored still takes the kept passwords.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "@vnm/kit/repo";

const FILE = join(ROOT, ".data", "database-roles.json");

/** The kept password of each domain's role, with one made for a domain that has none yet. */
function passwords(domains: string[]): Record<string, string> {
  const kept: Record<string, string> = existsSync(FILE) ? JSON.parse(readFileSync(FILE, "utf8")) : {};
  const missing = domains.filter((d) => !kept[d]);
  if (missing.length === 0) return kept;
  for (const d of missing) kept[d] = randomBytes(18).toString("base64url");
  mkdirSync(join(ROOT, ".data"), { recursive: true, mode: 0o700 });
  writeFileSync(FILE, `${JSON.stringify(kept, null, 2)}\n`, { mode: 0o600 });
  return kept;
}

/**
 * Makes (or brings up to date) the role `<database>_<domain>` and the schema `<domain>` it owns
 * for every domain; returns each domain's own DATABASE_URL. The services run their migrations
 * themselves, as their roles, when they start.
 */
export async function serviceDatabases(adminUrl: string, domains: string[]): Promise<Record<string, string>> {
  const { provisionRole, roleName, serviceDatabaseUrl } = await import("@vnm/kit");
  const kept = passwords(domains);
  const urls: Record<string, string> = {};
  for (const d of domains) {
    const role = { role: roleName(adminUrl, d), password: kept[d]! };
    await provisionRole(adminUrl, d, role);
    urls[d] = serviceDatabaseUrl(adminUrl, role);
  }
  return urls;
}
