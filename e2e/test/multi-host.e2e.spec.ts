// The multi-host harness (deploy/hosts.ts) end to end, the short way: up, a write, the host of
// every primary killed (Postgres, Redis, a NATS node), writes through the others until one is
// acknowledged, the first write still there, the host restored and answering it, down leaving
// nothing. The long check, `npm run hosts -- chaos` (each host killed and cut off under load,
// the primary's host killed mid-burst; 10-15 minutes), runs as the second test only when
// VNM_CHAOS=1, and its report is held to issue 56's goals.
// Skipped where the harness cannot run: not root, no network namespaces, an engine missing, or
// hosts already up on this machine (their namespaces have fixed names).
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "@vnm/kit/repo";

const ENGINES = ["ip", "nft", "etcd", "patroni", "haproxy", "redis-server", "redis-sentinel", "redis-cli", "nats-server", "setpriv"];

/** Why the harness cannot run here, or undefined when it can. */
function unable(): string | undefined {
  if (process.getuid?.() !== 0) return "not root";
  const has = (c: string) => spawnSync("sh", ["-c", `command -v ${c}`]).status === 0;
  const missing = ENGINES.filter((c) => !has(c));
  if (!existsSync("/usr/lib/postgresql/15/bin/postgres")) missing.push("postgresql-15");
  if (missing.length > 0) return `missing ${missing.join(", ")}`;
  const list = spawnSync("ip", ["netns", "list"], { encoding: "utf8" });
  if (list.status !== 0) return "no network namespaces";
  if (/^vnm-/m.test(list.stdout)) return "hosts are up already";
  return undefined;
}

const why = unable();
const parent = mkdtempSync(join(tmpdir(), "vnm-hosts-test-"));
// Postgres runs as the postgres user, which must get through to the run directory.
chmodSync(parent, 0o755);
const dir = join(parent, "run");
const env = { ...process.env, VNM_HOSTS_DIR: dir };
const hosts = (...args: string[]) => execFileSync(process.execPath, ["deploy/hosts.ts", ...args], { cwd: ROOT, env, encoding: "utf8", timeout: 400_000, stdio: ["ignore", "pipe", "inherit"] });
/** The chaos run: 10-15 minutes, so only when asked for. */
const chaos = process.env["VNM_CHAOS"] === "1";

afterAll(() => {
  if (!why) hosts("down");
  rmSync(parent, { recursive: true, force: true });
});

describe.skipIf(why !== undefined)(`npm run hosts${why ? ` (skipped: ${why})` : ""}`, () => {
  it("keeps every acknowledged write through the loss of the host of every primary, and leaves nothing behind", { timeout: 900_000 }, async () => {
    const lines = hosts("up").trim().split("\n");
    const urls = new Map(lines.filter((l) => l.startsWith("host")).map((l) => l.split(" ") as [string, string]));
    expect([...urls.keys()]).toEqual(["host1", "host2", "host3"]);
    const [, user, password] = lines.find((l) => l.startsWith("admin "))!.split(" ");
    const login = await fetch(`${urls.get("host2")}/login`, { method: "POST", headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` } });
    const token = ((await login.json()) as { key: string }).key;
    const call = (host: string, method: string, path: string, body?: unknown) =>
      fetch(`${urls.get(host)}${path}`, { method, headers: { "x-auth-token": token, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined, signal: AbortSignal.timeout(20_000) }).catch(() => undefined);

    const first = await call("host1", "POST", "/bridges", { name: "before", tenantId: "smoke" });
    expect(first?.status).toBe(201);
    const id = ((await first!.json()) as { id: string }).id;

    // host1 holds the Postgres and Redis primaries after up.
    hosts("kill", "host1");
    let written: Response | undefined;
    for (let i = 0; i < 120 && written?.status !== 201; i++) {
      written = await call(i % 2 ? "host2" : "host3", "POST", "/bridges", { name: `after-${i}`, tenantId: "smoke" });
      if (written?.status !== 201) await new Promise((r) => setTimeout(r, 1_000));
    }
    expect(written?.status).toBe(201);
    const kept = await call("host3", "GET", `/bridges/${id}`);
    expect(kept?.status).toBe(200);
    expect(((await kept!.json()) as { name: string }).name).toBe("before");

    hosts("restore", "host1");
    const back = await call("host1", "GET", `/bridges/${id}`);
    expect(back?.status).toBe(200);

    hosts("down");
    expect(execFileSync("ip", ["netns", "list"], { encoding: "utf8" })).not.toMatch(/^vnm-/m);
    expect(spawnSync("ip", ["link", "show", "vnm-hosts0"]).status).not.toBe(0);
    expect(existsSync(dir)).toBe(false);
  });
});

describe.skipIf(why !== undefined || !chaos)(
  `npm run hosts -- chaos${why ? ` (skipped: ${why})` : !chaos ? " (skipped: 10-15 minutes; run it as root with VNM_CHAOS=1 npx vitest run test/multi-host.e2e.spec.ts -t chaos)" : ""}`,
  () => {
    it("loses no acknowledged write, announces nothing twice, reads nothing stale, and writes again within 30 s of each fault", { timeout: 1_800_000 }, () => {
      // Whatever the test before left (it takes its hosts down, unless it failed midway).
      hosts("down");
      hosts("up");
      try {
        const run = spawnSync(process.execPath, ["deploy/hosts.ts", "chaos"], { cwd: ROOT, env, encoding: "utf8", timeout: 1_500_000, maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "inherit"] });
        if (!run.stdout.trim()) throw new Error(`the chaos run gave no report: exit ${run.status} ${run.signal ?? ""} ${run.error?.message ?? ""}`);
        const report = JSON.parse(run.stdout) as {
          phases: { phase: string; secondsUntilWritesSucceed: number; cascades?: { incomplete: number } }[];
          total: Record<string, number> & { feed: Record<string, number> };
        };
        const t = report.total;
        // Every step of the issue ran: each host killed, each cut off, the primary's host mid-burst.
        expect(report.phases.map((p) => p.phase.replace(/ \(host\d\)/, ""))).toEqual([
          "warm-up",
          "kill host1",
          "kill host2",
          "kill host3",
          "isolate host1",
          "isolate host2",
          "isolate host3",
          "kill the Postgres primary's host mid-burst",
        ]);
        expect(t["writesAcknowledged"]).toBeGreaterThan(1_000);
        expect(t["cascades"]).toBeGreaterThan(10);
        expect({
          acknowledgedWritesLost: t["acknowledgedWritesLost"],
          writesReportedFailedFoundApplied: t["writesReportedFailedFoundApplied"],
          duplicateEvents: t["duplicateEvents"],
          createsAnnouncedTwice: t["createsAnnouncedTwice"],
          acknowledgedWritesNotAnnounced: t["acknowledgedWritesNotAnnounced"],
          duplicateWrites: t["duplicateWrites"],
          staleReads: t["staleReads"],
          cascadesIncompleteAfterAStep: t["cascadesIncompleteAfterAStep"],
          cascadesIncomplete: t["cascadesIncomplete"],
          cascadeDeletionsAnnouncedTwice: t["cascadeDeletionsAnnouncedTwice"],
          cascadeDeletionsNotAnnounced: t["cascadeDeletionsNotAnnounced"],
          feedRepeats: t.feed["repeats"],
          feedSilentGaps: t.feed["silentGaps"],
          feedNeverHeard: t.feed["neverHeard"],
          feedAcknowledgedNotHeard: t.feed["acknowledgedNotHeard"],
          feedAcknowledgedHeardTwice: t.feed["acknowledgedHeardTwice"],
          feedMismatched: t.feed["mismatched"],
        }).toEqual({
          acknowledgedWritesLost: 0,
          writesReportedFailedFoundApplied: 0,
          duplicateEvents: 0,
          createsAnnouncedTwice: 0,
          acknowledgedWritesNotAnnounced: 0,
          duplicateWrites: 0,
          staleReads: 0,
          cascadesIncompleteAfterAStep: 0,
          cascadesIncomplete: 0,
          cascadeDeletionsAnnouncedTwice: 0,
          cascadeDeletionsNotAnnounced: 0,
          feedRepeats: 0,
          feedSilentGaps: 0,
          feedNeverHeard: 0,
          feedAcknowledgedNotHeard: 0,
          feedAcknowledgedHeardTwice: 0,
          feedMismatched: 0,
        });
        // The goal: writes succeed again within 30 s of each fault.
        expect(report.phases.filter((p) => p.secondsUntilWritesSucceed > 30).map((p) => `${p.phase}: ${p.secondsUntilWritesSucceed} s`)).toEqual([]);
        // The run's own verdict agrees (it exits 1 when a must is not met).
        expect(run.status).toBe(0);
      } finally {
        hosts("down");
      }
      expect(execFileSync("ip", ["netns", "list"], { encoding: "utf8" })).not.toMatch(/^vnm-/m);
    });
  },
);
