// Where a row's CPU goes: the user + system time each process used while the row ran, read from
// /proc, per request. The bench's own children are named by what they run; the servers the stack
// shares are found by command name (every Postgres backend counted together). Request rates
// drift with this machine's speed; the CPU a request costs in each process shows which process
// a change moved, and what a write costs that a read does not.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of the times in /proc/<pid>/stat. */
const TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** The shared servers, by the command name /proc gives them, and the label they are counted under. */
const SERVERS = new Map([
  ["postgres", "postgres"],
  ["nats-server", "nats"],
  ["redis-server", "redis"],
]);

/** User + system CPU seconds a process has used; undefined once it is gone. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command (which may hold spaces and parentheses): state is the first, utime the 12th.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return undefined;
  }
}

/** CPU seconds so far of every watched process, by pid, with its label. */
export type CpuSample = Map<number, { label: string; seconds: number }>;

/** Samples the bench's own processes (`own`: label and pid) and every shared server running now. */
export function sampleCpu(own: Iterable<readonly [label: string, pid: number | undefined]>): CpuSample {
  const out: CpuSample = new Map();
  const add = (pid: number, label: string) => {
    const seconds = cpuSeconds(pid);
    if (seconds !== undefined) out.set(pid, { label, seconds });
  };
  for (const [label, pid] of own) if (pid !== undefined) add(pid, label);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let comm: string;
    try {
      comm = readFileSync(`/proc/${entry}/comm`, "utf8").trim();
    } catch {
      continue;
    }
    const label = SERVERS.get(comm);
    if (label && !out.has(Number(entry))) add(Number(entry), label);
  }
  return out;
}

/** CPU used between samples, summed over one or more spans, then given per request. */
export class CpuAccount {
  private readonly seconds = new Map<string, number>();
  private requests = 0;

  /** One span: `before` and `after` sampled around a run of `requests` requests (a process started in between counts from zero). */
  add(before: CpuSample, after: CpuSample, requests: number): void {
    this.requests += requests;
    for (const [pid, a] of after) {
      const used = a.seconds - (before.get(pid)?.seconds ?? 0);
      if (used > 0) this.seconds.set(a.label, (this.seconds.get(a.label) ?? 0) + used);
    }
  }

  /** Microseconds per request by label, the largest first, those under 1 us left out; undefined before any request. */
  perRequest(): Record<string, number> | undefined {
    if (this.requests === 0) return undefined;
    const us = [...this.seconds].map(([label, s]) => [label, Math.round((s * 1e6) / this.requests)] as const);
    return Object.fromEntries(us.filter(([, v]) => v >= 1).sort((a, b) => b[1] - a[1]));
  }
}

/** "gateway 320, bridge 283, postgres 198; 801 in all" (microseconds). */
export function describeCpu(cpu: Record<string, number>): string {
  const all = Object.values(cpu).reduce((a, b) => a + b, 0);
  return `${Object.entries(cpu)
    .map(([label, us]) => `${label} ${us}`)
    .join(", ")}; ${all} in all`;
}
