// wrk as the load generator of `npm run bench`: a C program on its own thread, so the figures
// are not squeezed by a Node load generator competing for the same cores. One Lua script per
// run sets the headers and the request mix and prints a JSON summary at the end.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { memberOf } from "@vnm/kit/values";

/** What the wrk script's summary line (WRKJSON) holds, each a number. */
const WRK_FIELDS = ["us", "requests", "p50", "p99", "status", "connect", "read", "write", "timeout"] as const;

/**
 * The percentiles each run reports besides p50 and p99 (every 1% to 94, every 0.1% from 95, then
 * 99.95, 99.99 and the maximum, which wrk's percentile(100) does not give): runs of one row are merged through them into the percentiles of
 * all their requests together, as one longer run would report them.
 */
const GRID = [
  ...Array.from({ length: 94 }, (_, i) => i + 1),
  ...Array.from({ length: 50 }, (_, i) => Math.round((95 + i / 10) * 10) / 10),
  99.95,
  99.99,
  100,
];

export interface WrkRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface WrkRun {
  /** Origin, e.g. http://127.0.0.1:8080 */
  origin: string;
  /** Cycled through in order by every connection (one request: wrk's fast path). */
  requests: WrkRequest[];
  /**
   * A request after each 429 sent this many ms late (a client that backs off rather than asking
   * again at once). wrk's Lua state is per thread, not per connection: the pause is owed by the
   * thread and taken by its next request.
   */
  pauseAfter429Ms?: number;
  headers?: Record<string, string>;
  connections: number;
  seconds: number;
  threads?: number;
}

export interface WrkResult {
  requests: number;
  rps: number;
  /** Latency percentiles, ms. */
  p50: number;
  p99: number;
  /** Responses that were not 2xx or 3xx. */
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Latency at each percentile of GRID, ms: what merges runs. */
  grid: number[];
}

const WRK = "/usr/bin/wrk";

/** The wrk binary, installed from Debian when missing (needs root). */
export function ensureWrk(): string {
  for (const p of [WRK, "/usr/local/bin/wrk"]) if (existsSync(p)) return p;
  console.error("# wrk is missing: apt-get install -y wrk");
  execFileSync("apt-get", ["install", "-y", "wrk"], { stdio: ["ignore", "inherit", "inherit"] });
  if (!existsSync(WRK)) throw new Error("wrk is still missing after apt-get install -y wrk");
  return WRK;
}

const lua = (s: string) => JSON.stringify(s); // a JSON string is a valid Lua string literal here

function script(run: WrkRun): string {
  const headers = Object.entries(run.headers ?? {})
    .map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`)
    .join("\n");
  const done = `
function done(summary, latency, requests)
  local e = summary.errors
  local grid = {}
  for i, p in ipairs({${GRID.join(", ")}}) do grid[i] = string.format("%d", p < 100 and latency:percentile(p) or latency.max) end
  io.write(string.format('WRKJSON {"requests":%d,"us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p99":%d,"grid":[%s]}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), table.concat(grid, ",")))
end`;
  const pause = run.pauseAfter429Ms
    ? `
local owed = 0
function response(status, headers, body)
  if status == 429 then owed = owed + 1 end
end
function delay()
  if owed > 0 then
    owed = owed - 1
    return ${Math.round(run.pauseAfter429Ms)}
  end
  return 0
end`
    : "";
  if (run.requests.length === 1) {
    const r = run.requests[0]!;
    const one = [
      `wrk.method = ${lua(r.method ?? "GET")}`,
      `wrk.path = ${lua(r.path)}`,
      r.body === undefined ? "" : `wrk.body = ${lua(r.body)}`,
      ...Object.entries(r.headers ?? {}).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`),
    ].join("\n");
    return `${headers}\n${one}\n${pause}\n${done}\n`;
  }
  // wrk.format uses the headers it is given instead of wrk.headers: every request carries both.
  const specs = run.requests
    .map((r) => {
      const h = Object.entries({ ...run.headers, ...r.headers })
        .map(([k, v]) => `[${lua(k)}] = ${lua(v)}`)
        .join(", ");
      return `  {${lua(r.method ?? "GET")}, ${lua(r.path)}, {${h}}, ${r.body === undefined ? "nil" : lua(r.body)}}`;
    })
    .join(",\n");
  return `${headers}
local specs = {
${specs}
}
local built = {}
local i = 0
function init(args)
  for k, s in ipairs(specs) do built[k] = wrk.format(s[1], s[2], s[3], s[4]) end
end
function request()
  i = i + 1
  return built[(i - 1) % #built + 1]
end
${pause}
${done}
`;
}

let scriptNo = 0;

/** One wrk run; resolves with its summary. */
export function wrk(bin: string, tmpDir: string, run: WrkRun): Promise<WrkResult> {
  const file = join(tmpDir, `wrk-${process.pid}-${scriptNo++}.lua`);
  writeFileSync(file, script(run));
  const args = [
    `-t${run.threads ?? 1}`,
    `-c${run.connections}`,
    `-d${run.seconds}s`,
    "--timeout",
    "10s",
    "-s",
    file,
    `${run.origin}${run.requests[0]!.path}`,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      const m = /^WRKJSON (.*)$/m.exec(out);
      if (code !== 0 || !m) return reject(new Error(`wrk ${args.join(" ")} exited ${code}:\n${out}`));
      const j: unknown = JSON.parse(m[1]!);
      const missing = WRK_FIELDS.filter((k) => typeof memberOf(j, k) !== "number");
      if (missing.length > 0) return reject(new Error(`wrk's summary has no ${missing.join(", ")}:\n${m[1]}`));
      const n = (k: (typeof WRK_FIELDS)[number]) => Number(memberOf(j, k));
      const secs = n("us") / 1e6;
      const grid = memberOf(j, "grid");
      if (!Array.isArray(grid) || grid.length !== GRID.length || !grid.every((us) => typeof us === "number")) {
        return reject(new Error(`wrk's summary has no latency at each of the ${GRID.length} percentiles:\n${m[1]}`));
      }
      resolve({
        grid: grid.map((us: number) => us / 1000),
        requests: n("requests"),
        rps: secs > 0 ? n("requests") / secs : 0,
        p50: n("p50") / 1000,
        p99: n("p99") / 1000,
        non2xx: n("status"),
        errors: n("connect") + n("read") + n("write"),
        timeouts: n("timeout"),
      });
    });
  });
}

/** Several wrk runs side by side (e.g. one per gateway replica), summed. */
export async function wrkTogether(bin: string, tmpDir: string, runs: WrkRun[]): Promise<WrkResult> {
  const all = await Promise.all(runs.map((r) => wrk(bin, tmpDir, r)));
  const sum = (f: (r: WrkResult) => number) => all.reduce((a, r) => a + f(r), 0);
  return {
    requests: sum((r) => r.requests),
    rps: sum((r) => r.rps),
    ...merged(all),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
  };
}

/** The share of a run's requests (0..1) that took at most `ms`, from its GRID percentiles. */
function shareWithin(grid: number[], ms: number): number {
  if (ms < grid[0]!) return ((GRID[0]! / 100) * ms) / grid[0]!;
  for (let i = 1; i < grid.length; i++) {
    if (ms < grid[i]!) {
      const span = grid[i]! - grid[i - 1]!;
      return (GRID[i - 1]! + ((GRID[i]! - GRID[i - 1]!) * (ms - grid[i - 1]!)) / span) / 100;
    }
  }
  return 1;
}

/** The latency (ms) under which a share `q` of all the runs' requests finished, their distributions weighted by their requests. */
function percentileOf(all: { requests: number; grid: number[] }[], q: number): number {
  const total = all.reduce((a, r) => a + r.requests, 0);
  const within = (ms: number) => all.reduce((a, r) => a + r.requests * shareWithin(r.grid, ms), 0) / total;
  let lo = 0;
  let hi = Math.max(...all.map((r) => r.grid[r.grid.length - 1]!));
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (within(mid) >= q) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * The latency of several runs' requests together, as one run of them all reports it: each
 * percentile of GRID, p50 and p99, merged through each run's GRID (a run without requests adds
 * nothing).
 */
function merged(all: WrkResult[]): Pick<WrkResult, "p50" | "p99" | "grid"> {
  const counted = all.filter((r) => r.requests > 0);
  if (counted.length === 0) return { p50: 0, p99: 0, grid: GRID.map(() => 0) };
  const at = (q: number) => percentileOf(counted, q);
  return { p50: at(0.5), p99: at(0.99), grid: GRID.map((p) => at(p / 100)) };
}

/**
 * Runs made one after another against the same target (the chunks of a paired scenario), as
 * one: requests summed over the time they took, the percentiles of all their requests (merged).
 */
export function inSequence(all: WrkResult[]): WrkResult {
  const sum = (f: (r: WrkResult) => number) => all.reduce((a, r) => a + f(r), 0);
  const seconds = sum((r) => (r.rps > 0 ? r.requests / r.rps : 0));
  return {
    requests: sum((r) => r.requests),
    rps: seconds > 0 ? sum((r) => r.requests) / seconds : 0,
    ...merged(all),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
  };
}
