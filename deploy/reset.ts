// `npm run reset`: says where `npm start`'s embedded PostgreSQL keeps this checkout's data and,
// once confirmed (a typed "yes" on a terminal, or `--yes`), deletes it, so the next `npm start`
// begins afresh: an empty system and a new generated admin password. Refused while vnm runs on
// that data. Exit status: 0 deleted or nothing to delete, 1 refused (running) or not confirmed,
// 2 a usage error (an unknown argument; no terminal to ask and no --yes).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline/promises";
import { dataHome } from "./postgres.ts";

const say = (msg: string) => process.stdout.write(`${msg}\n`);

function stop(status: number, msg: string): never {
  process.stderr.write(`${msg}\n`);
  process.exit(status);
}

/** The embedded server's process while it runs on `dataDir` (its postmaster.pid names a live process). */
function runningServer(dataDir: string): number | undefined {
  const file = join(dataDir, "postmaster.pid");
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, "utf8").split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM" ? pid : undefined; // alive, another user's
  }
}

/** "12M", as du says it; empty when du cannot tell. */
function sizeOf(dir: string): string {
  try {
    return execFileSync("du", ["-sh", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).split("\t")[0]!;
  } catch {
    return "";
  }
}

async function confirmed(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await rl.question(question)).trim().toLowerCase() === "yes";
  } finally {
    rl.close();
  }
}

const args = process.argv.slice(2);
const unknown = args.find((a) => a !== "--yes" && a !== "-y");
if (unknown !== undefined) stop(2, `unknown argument ${unknown}: npm run reset [-- --yes]`);
const home = dataHome();
const dataDir = join(home, "postgres");
if (process.env["DATABASE_URL"]) say(`DATABASE_URL is set: npm start keeps its data in that database, which this leaves alone.`);
if (!existsSync(home)) {
  say(`no data at ${home} (npm start's embedded PostgreSQL): nothing to delete`);
  process.exit(0);
}
const size = sizeOf(home);
say(`vnm's data (npm start's embedded PostgreSQL): ${home}${size ? ` (${size})` : ""}`);
const pid = runningServer(dataDir);
if (pid !== undefined) stop(1, `vnm is running on this data (PostgreSQL process ${pid}): stop it first (Ctrl-C where npm start runs), then run this again. Nothing deleted.`);
if (!args.length) {
  if (!process.stdin.isTTY) stop(2, "nothing deleted: no terminal to ask on; npm run reset -- --yes deletes without asking");
  const question = "Delete it? Every user, the admin password and every item go; the next npm start begins afresh. Type yes to delete: ";
  if (!(await confirmed(question))) stop(1, "nothing deleted");
}
rmSync(home, { recursive: true, force: true });
say(`deleted ${home}: the next npm start begins afresh and prints a new admin password`);
