// freePort: stacks started by two processes at once (two packages' tests, a test and the launcher
// it runs) never get the same port, and none the kernel gives out by itself (port 0, a
// connection's source port) between the moment a port is handed out and the moment it is bound.
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { freePort } from "../src/repo.ts";

const repo = join(import.meta.dirname, "..", "src", "repo.ts");
const PICKS = 300;

it("two processes picking ports at once never get the same one, all below the kernel's ephemeral range, and a process's claims go when it exits", async () => {
  // The other process picks as many, none of them bound (as a stack's ports while its processes start).
  const other = promisify(execFile)(process.execPath, ["--input-type=module", "-e", `const { freePort } = await import(${JSON.stringify(repo)}); const ports = []; for (let i = 0; i < ${PICKS}; i++) ports.push(await freePort()); console.log(JSON.stringify(ports));`]);
  const mine: number[] = [];
  for (let i = 0; i < PICKS; i++) mine.push(await freePort());
  const theirs = JSON.parse((await other).stdout) as number[];
  expect(new Set(mine).size).toBe(PICKS);
  expect(new Set(theirs).size).toBe(PICKS);
  expect(mine.filter((p) => theirs.includes(p))).toEqual([]);
  const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  expect([...mine, ...theirs].filter((p) => p >= low)).toEqual([]);
  // The other process has exited: its ports are free to be handed out again; this one's are still held.
  expect(theirs.filter((p) => existsSync(join(tmpdir(), "vnm-ports", String(p))))).toEqual([]);
  expect(mine.filter((p) => !existsSync(join(tmpdir(), "vnm-ports", String(p))))).toEqual([]);
});
