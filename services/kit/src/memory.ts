// Memory given back when a process goes quiet. V8 keeps the heap pages a busy spell (or the
// start-up: loading code and protos) left behind, even after collecting what was on them: an
// idle gateway or service held 110-118 MB RSS of which 15-25 MB were such pages. Once a process
// has been busy and then quiet for a whole period, one memory-reducing full GC (V8's
// "last resort" flavour: compacts, and returns free pages to the system) gives them back:
// about 112 -> 90 MB for a service, 114 -> 90 MB for the gateway (docs/perf/README.md).
import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Logger } from "./log.ts";

type Gc = (options: { type: "major"; execution: "async"; flavor: "last-resort" }) => Promise<void> | undefined;

/** Event-loop utilisation below this over a period counts as quiet; above it, as busy. */
const QUIET_UTILISATION = 0.05;

let started = false;

/**
 * V8's gc(), without exposing it to the process's own code: taken from a fresh context while
 * the flag is on, then the flag is turned off again (the way test runners take it too).
 */
function gcFunction(): Gc | undefined {
  const exposed = globalThis.gc;
  if (exposed) return exposed;
  try {
    setFlagsFromString("--expose-gc");
    return runInNewContext("gc") as Gc;
  } catch {
    return undefined;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
}

/** The reclaim period a process's environment sets: VNM_RECLAIM_IDLE_SECONDS, 10 when unset; 0 is off. */
export function reclaimPeriodSeconds(env: NodeJS.ProcessEnv = process.env): number {
  return Number(env["VNM_RECLAIM_IDLE_SECONDS"] ?? "10");
}

/**
 * Starts watching the event loop (once per process; later calls do nothing): once the process
 * has been quiet for a whole `periodSeconds` (VNM_RECLAIM_IDLE_SECONDS, 10; 0 turns it off)
 * after being busy (the start-up counts as busy), one memory-reducing GC runs. The loop's
 * utilisation is sampled every second (a quarter of the period, if less), and the quiet must be
 * unbroken: one busy sample starts it over. Measured over the whole period instead, a load that
 * came back in the period's last half second still read as quiet, and the GC (two full
 * compactions, back to back: 200 and 250 ms of a bench gateway's main thread on a loaded
 * machine) landed on that load's first requests; the bench's rows alternate with baselines that
 * leave the gateway quiet for as long as a period.
 * A steady light load never triggers it; a burst followed by quiet does, once. `log` hears
 * (debug) what it gave back.
 */
export function reclaimWhenQuiet(log?: Logger, periodSeconds = reclaimPeriodSeconds()): void {
  if (started || !(periodSeconds > 0)) return;
  const gc = gcFunction();
  if (!gc) return;
  started = true;
  const periodMs = periodSeconds * 1000;
  const stepMs = Math.min(1_000, periodMs / 4);
  let last = performance.eventLoopUtilization();
  let busySinceLastReclaim = true;
  /** How long the loop has been quiet without a break (ms, in whole samples). */
  let quietMs = 0;
  let collecting = false;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilisation = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (utilisation >= QUIET_UTILISATION) {
      busySinceLastReclaim = true;
      quietMs = 0;
      return;
    }
    quietMs += stepMs;
    if (quietMs < periodMs || !busySinceLastReclaim || collecting) return;
    busySinceLastReclaim = false;
    collecting = true;
    const before = process.memoryUsage();
    void Promise.resolve(gc({ type: "major", execution: "async", flavor: "last-resort" }))
      .then(() => log?.debug("memory given back", memoryFields(before, process.memoryUsage())))
      .catch(() => {})
      .finally(() => {
        collecting = false;
        // The collection's own time is not the process being busy.
        last = performance.eventLoopUtilization();
      });
  }, stepMs);
  timer.unref();
}

/** Log fields of a reclaim: RSS and heap before and after, in MB. */
function memoryFields(before: NodeJS.MemoryUsage, after: NodeJS.MemoryUsage): Record<string, number> {
  const mb = (n: number) => Math.round(n / 104857.6) / 10;
  return { rssMbBefore: mb(before.rss), rssMbAfter: mb(after.rss), heapMbBefore: mb(before.heapTotal), heapMbAfter: mb(after.heapTotal) };
}
