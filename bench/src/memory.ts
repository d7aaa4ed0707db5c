// Memory figures of the bench's processes: RSS from /proc, and what the memory probe
// (memory-probe.ts, BENCH_MEM_PROBE=1) says a process's memory is made of.
import { setTimeout as sleep } from "node:timers/promises";
import { readFileSync } from "node:fs";
import type { Proc } from "@vnm/kit/testing";


/** A process's resident set (MB, one decimal); undefined once it is gone. */
export function rssMb(p: Proc): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.child.pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : undefined;
  } catch {
    return undefined;
  }
}

/** RSS once it has stopped moving: two readings 2 s apart within 1 MB of each other (at most 20 s). */
export async function settledRss<T extends Record<string, number | undefined>>(read: () => T): Promise<T> {
  let last = read();
  for (let i = 0; i < 10; i++) {
    await sleep(2_000);
    const now = read();
    if (Object.keys(now).every((k) => Math.abs((now[k] ?? 0) - (last[k] ?? 0)) < 1)) return now;
    last = now;
  }
  return last;
}

/** What a process started with the memory probe reports on SIGUSR2 (undefined when it says nothing within 5 s). */
export async function probeMemory(p: Proc): Promise<unknown> {
  const seen = p.output.length;
  p.child.kill("SIGUSR2");
  for (let i = 0; i < 50; i++) {
    await sleep(100);
    const m = /MEMPROBE (.*)/.exec(p.output.slice(seen).join(""));
    if (m) return JSON.parse(m[1]!);
  }
  return undefined;
}
