// An administrator's unpaged GET /bridges over a big table (BENCH_BIG_LIST bridges, 100,000 by
// default, made through POST /bridges): the time to the answer's first byte and to its last, and
// how far the gateway's and the bridge service's resident memory rise while it is read (sampled
// every 5 ms). A list this long is streamed page by page, so neither process holds it whole.
import { readFileSync } from "node:fs";
import type { Proc } from "@vnm/kit/testing";
import type { Bridges } from "./bridges.ts";
import type { Goal } from "./report.ts";
import { fmt } from "./table.ts";

export interface BigList {
  bridges: number;
  items: number;
  bytes: number;
  firstByteMs: number;
  lastByteMs: number;
  /** MiB above the RSS before the request, at its highest while the list was read. */
  rise: { gateway: number; bridge: number };
}

/** The goals of an unpaged list (docs/perf/README.md): the first byte at once, memory flat. */
const FIRST_BYTE_MS = 300;
const RISE_MIB = 48;

const rssMib = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;

/** Reads the whole unpaged list once as the admin, sampling both processes' RSS. */
export async function readAll(url: string, api: (u: string) => Promise<Response>, pids: { gateway: number; bridge: number }): Promise<Omit<BigList, "bridges">> {
  const start = { gateway: rssMib(pids.gateway), bridge: rssMib(pids.bridge) };
  const peak = { ...start };
  const sampler = setInterval(() => {
    peak.gateway = Math.max(peak.gateway, rssMib(pids.gateway));
    peak.bridge = Math.max(peak.bridge, rssMib(pids.bridge));
  }, 5);
  const t0 = performance.now();
  const r = await api(url);
  let firstByteMs = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of r.body!) {
    if (!firstByteMs) firstByteMs = performance.now() - t0;
    chunks.push(Buffer.from(chunk));
  }
  const lastByteMs = performance.now() - t0;
  clearInterval(sampler);
  const body = Buffer.concat(chunks);
  const list: unknown = JSON.parse(body.toString());
  if (!Array.isArray(list)) throw new Error(`the unpaged list is not a JSON array: ${body.toString().slice(0, 200)}`);
  const items = list.length;
  return { items, bytes: body.length, firstByteMs, lastByteMs, rise: { gateway: peak.gateway - start.gateway, bridge: peak.bridge - start.bridge } };
}

/** Grows the table to `size`, then reads the unpaged list twice and keeps the second (the first warms the path). */
export async function bigListRow(bridges: Bridges, size: number, base: string, api: (u: string) => Promise<Response>, procs: { gateway: Proc; bridge: Proc }): Promise<BigList> {
  await bridges.growTo(size);
  const pids = { gateway: procs.gateway.child.pid!, bridge: procs.bridge.child.pid! };
  await readAll(`${base}/bridges`, api, pids);
  const m = await readAll(`${base}/bridges`, api, pids);
  console.error(`# unpaged GET /bridges over ${fmt(bridges.rows)} bridges: first byte ${fmt(m.firstByteMs)} ms, last ${fmt(m.lastByteMs)} ms, ${fmt(m.bytes / 1e6, 1)} MB`);
  return { bridges: bridges.rows, ...m };
}

export function bigListGoals(b: BigList): Goal[] {
  const what = `unpaged GET /bridges over ${fmt(b.items)} bridges`;
  return [
    // The list also holds what the write rows created before it: at least the bridges made for it.
    { goal: `${what}: first byte < ${FIRST_BYTE_MS} ms`, pass: b.firstByteMs < FIRST_BYTE_MS && b.items >= b.bridges, detail: `${fmt(b.firstByteMs)} ms (last byte ${fmt(b.lastByteMs)} ms, ${fmt(b.items)} items, ${fmt(b.bytes / 1e6, 1)} MB)` },
    { goal: `${what}: RSS rise < ${RISE_MIB} MiB`, pass: b.rise.gateway < RISE_MIB && b.rise.bridge < RISE_MIB, detail: `gateway +${fmt(b.rise.gateway, 1)} MiB, bridge service +${fmt(b.rise.bridge, 1)} MiB` },
  ];
}
