// Upgrades without a stop (expand/contract, docs/operations.md): during a rolling upgrade the
// previous release's processes run on the schema the new release migrated, and the new
// release starts on the previous release's data. "The previous release" is the commit before
// the newest change to any service's migrations (HEAD while the working tree changes one; or
// VNM_PREVIOUS_RELEASE), read from git.
// - Every migration list only appends to the previous release's, and a new migration drops or
//   renames no column or table the previous release's code names.
// - For each service whose migrations changed since then: the previous release's service starts
//   on a schema of its own (its data), the current one starts on it (migrating it) and answers its
//   List calls, and the previous release's starts again on the migrated schema and answers them.
//   Each release's service is started and called by that release's own test harness, so a
//   release that changed how parts authenticate is still spoken to in its own terms.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { loadContract, type Migration, roleName } from "../src/index.ts";
import { DEPS, directService, dropSchema, ROOT, serviceDomains } from "../src/testing.ts";

const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();
const migrationsFile = (d: string) => `services/${d}/src/migrations.ts`;

/** HEAD when a migration list changed in the working tree; else the commit before the newest one that changed one. */
function previousRelease(): string {
  const given = process.env["VNM_PREVIOUS_RELEASE"];
  if (given) return git("rev-parse", given);
  const files = serviceDomains().map(migrationsFile);
  if (git("diff", "--name-only", "HEAD", "--", ...files) !== "") return git("rev-parse", "HEAD");
  // Releases are main's own commits: a branch merged into it is part of the merge, not a release.
  const changed = git("log", "-1", "--first-parent", "--format=%H", "--", ...files);
  return git("rev-parse", `${changed}^`);
}

const previous = previousRelease();
const work = mkdtempSync(join(tmpdir(), "vnm-upgrade-"));

afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A service's migration list at `rev` (none when the service did not exist), or in the working tree. */
async function migrationsAt(domain: string, rev?: string): Promise<Migration[]> {
  if (!rev) return ((await import(pathToFileURL(join(ROOT, migrationsFile(domain))).href)) as { migrations: Migration[] }).migrations;
  let source: string;
  try {
    source = git("show", `${rev}:${migrationsFile(domain)}`);
  } catch {
    return [];
  }
  const file = join(work, `${domain}-${rev.slice(0, 12)}.ts`);
  writeFileSync(file, source);
  return ((await import(pathToFileURL(file).href)) as { migrations: Migration[] }).migrations;
}

/** Names a migration drops or renames away: columns and tables. */
function removedNames(sql: string): string[] {
  const names: string[] = [];
  for (const m of sql.matchAll(/\bDROP\s+(?:COLUMN|TABLE)\s+(?:IF\s+EXISTS\s+)?"?(\w+)"?/gi)) names.push(m[1]!);
  for (const m of sql.matchAll(/\bRENAME\s+(?:COLUMN\s+)?"?(\w+)"?\s+TO\b/gi)) names.push(m[1]!);
  return names;
}

/** Whether the previous release's code of a service (its sources, the kit, the protos) names `word`. */
function namedBefore(domain: string, word: string): boolean {
  try {
    git("grep", "-q", "-w", "-i", word, previous, "--", `services/${domain}/src`, "services/kit/src", "proto");
    return true;
  } catch {
    return false;
  }
}

describe(`migrations against the previous release (${previous.slice(0, 12)})`, () => {
  for (const domain of serviceDomains()) {
    it(`${domain}: the list only appends, and drops or renames nothing the previous release reads`, async () => {
      const [before, now] = [await migrationsAt(domain, previous), await migrationsAt(domain)];
      expect(now.slice(0, before.length)).toEqual(before);
      for (const m of now.slice(before.length)) {
        const read = removedNames(m.sql).filter((n) => namedBefore(domain, n));
        expect(read, `migration ${m.version} of ${domain} removes what the previous release reads`).toEqual([]);
      }
    });
  }
});

/**
 * The previous release's services/, proto/ and package files in a directory of their own, with
 * the installed packages but its own workspaces (node_modules/@vnm points into the copy). A
 * package the previous release runs on that this one dropped stays a dev dependency of the kit
 * for one release (zod, dropped with the last zod schema), so the copy finds it offline.
 */
function previousCopy(): string {
  const dir = join(work, "previous");
  mkdirSync(dir);
  execFileSync("sh", ["-c", `git archive ${previous} services proto package.json tsconfig.base.json | tar -x -C ${dir}`], { cwd: ROOT });
  mkdirSync(join(dir, "node_modules", "@vnm"), { recursive: true });
  for (const entry of readdirSync(join(ROOT, "node_modules"))) {
    if (entry !== "@vnm") symlinkSync(join(ROOT, "node_modules", entry), join(dir, "node_modules", entry));
  }
  for (const d of readdirSync(join(dir, "services"))) symlinkSync(join(dir, "services", d), join(dir, "node_modules", "@vnm", d === "kit" ? "kit" : `${d}-service`));
  return dir;
}

/** Whether the previous release had the service at all (one added since has no previous release to run). */
function existedBefore(domain: string): boolean {
  try {
    git("cat-file", "-e", `${previous}:services/${domain}/src/main.ts`);
    return true;
  } catch {
    return false;
  }
}

/** The domains whose migration lists differ between the previous release and now, of the services it had. */
function changedDomains(): string[] {
  return serviceDomains().filter((d) => existedBefore(d) && git("diff", "--name-only", previous, "--", migrationsFile(d)) !== "");
}

/** What the upgrade test asks of a running service, whichever release's harness started it. */
interface Running {
  call(service: string, rpc: string, request: unknown): Promise<{ err: { code?: number; message?: string } | null }>;
  stop(opts?: { keepSchema?: boolean }): Promise<void>;
}

/**
 * The previous release's own harness (its services/kit/src/testing.ts, in the copy), which
 * starts that release's service from the copy and speaks its protocol (its tokens, say).
 */
async function previousHarness(dir: string): Promise<{ directService(domain: string, env: NodeJS.ProcessEnv): Promise<Running> }> {
  return import(pathToFileURL(join(dir, "services", "kit", "src", "testing.ts")).href);
}

/**
 * Every List call of a service answers something other than an internal error (a missing column,
 * say): the calls of the release whose proto directory is given (this one's by default), since a
 * release is not asked for methods it never had (a service added since).
 */
async function listsAnswer(svc: Running, domain: string, proto?: string): Promise<void> {
  const { pkg, catalog } = loadContract(proto);
  for (const s of catalog.services.filter((x) => x.domain === domain)) {
    for (const def of Object.values(pkg.service(s.name).service)) {
      const rpc = def.path.slice(def.path.lastIndexOf("/") + 1);
      if (!rpc.startsWith("List")) continue;
      const r = await svc.call(s.name, rpc, {});
      expect([undefined, 0, 3, 5, 7, 9], `${s.name}/${rpc}: ${r.err?.message}`).toContain(r.err?.code);
    }
  }
}

describe("the previous release and this one on the same schema", () => {
  const domains = changedDomains();
  it.skipIf(domains.length === 0)(`previous, then current, then previous again: ${domains.join(", ")}`, async () => {
    const dir = previousCopy();
    const before = await previousHarness(dir);
    for (const domain of domains) {
      const env = { VNM_DB_SCHEMA: `${domain}_u${randomBytes(4).toString("hex")}`, VNM_ADMIN_PASSWORD: "upgrade-test-password", LOG_LEVEL: "warn" };
      try {
        // The previous release's data: its schema, with what it seeds at its start.
        await (await before.directService(domain, env)).stop({ keepSchema: true });
        const current = await directService(domain, env);
        await listsAnswer(current, domain).finally(() => current.stop({ keepSchema: true }));
        // A previous release's process still running while the upgrade rolls (or rolled back to).
        const again = await before.directService(domain, env);
        await listsAnswer(again, domain, join(dir, "proto")).finally(() => again.stop({ keepSchema: true }));
      } finally {
        await dropSchema(env.VNM_DB_SCHEMA, roleName(DEPS.databaseUrl, env.VNM_DB_SCHEMA));
      }
    }
  }, 120_000);
});
