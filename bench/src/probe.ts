// The open-loop probe of the replay step (replay.ts), a process of its own: sends GET <url> every
// <everyMs> for <seconds> whether or not the earlier ones were answered (each on a pooled
// connection, or a new one when all are busy), and prints one JSON line: how many, how many
// failed, and the answers' latencies (ms) from each request's sending to its last byte. The
// requests of its first <warmupSeconds> are sent the same way but not counted: a process just
// started answers its own first hundred milliseconds slowly (50-260 ms against a bare node:http
// server on a quiet machine), which is the probe's start, not the server's latency; wrk's rows
// warm up too.
// Usage: node bench/src/probe.ts <url> <seconds> <everyMs> <warmupSeconds>
import { Agent, get } from "node:http";

const [url, secondsArg, everyArg, warmupArg] = process.argv.slice(2);
const warmupMs = Number(warmupArg) * 1000;
const seconds = Number(secondsArg) + warmupMs / 1000;
const everyMs = Number(everyArg);
if (!url || !(seconds > 0) || !(everyMs > 0) || !(warmupMs >= 0)) {
  process.stderr.write("usage: probe.ts <url> <seconds> <everyMs> <warmupSeconds>\n");
  process.exit(2);
}
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
const latencies: number[] = [];
let failed = 0;
let pending = 0;
const start = performance.now();
let sent = 0;

function send(): void {
  const at = performance.now();
  const counted = at - start >= warmupMs;
  pending++;
  const done = (ok: boolean) => {
    pending--;
    if (counted && ok) latencies.push(performance.now() - at);
    else if (counted) failed++;
    if (pending === 0 && performance.now() - start >= seconds * 1000) finish();
  };
  get(url!, { agent }, (res) => {
    res.resume();
    res.on("end", () => done(res.statusCode === 200));
    res.on("error", () => done(false));
  }).on("error", () => done(false));
}

// The schedule, not the answers, decides when each is sent: a tick late by several periods sends
// the ones it owes at once.
function tick(): void {
  const now = performance.now();
  while (start + sent * everyMs <= now && now - start < seconds * 1000) {
    sent++;
    send();
  }
  if (now - start < seconds * 1000) setTimeout(tick, everyMs);
  else if (pending === 0) finish();
}

let finished = false;
function finish(): void {
  if (finished) return;
  finished = true;
  agent.destroy();
  process.stdout.write(`${JSON.stringify({ sent: latencies.length + failed, failed, latencies: latencies.map((l) => Math.round(l * 100) / 100) })}\n`);
}

tick();
