// The replaying clients of the replay step (replay.ts), a process of their own: <clients> streams
// of GET <base>/events, each resuming from Last-Event-ID 0 and reading until it has <events>
// events, then again from 0, for <seconds>. Prints one JSON line: replays completed, events and
// bytes read. Usage: node bench/src/replay-clients.ts <base> <token> <clients> <events> <seconds>
const [base, token, clientsArg, eventsArg, secondsArg] = process.argv.slice(2);
const clients = Number(clientsArg);
const events = Number(eventsArg);
const until = Date.now() + Number(secondsArg) * 1000;
if (!base || !token || !(clients > 0) || !(events > 0) || !(Number(secondsArg) > 0)) {
  process.stderr.write("usage: replay-clients.ts <base> <token> <clients> <events> <seconds>\n");
  process.exit(2);
}
let replays = 0;
let eventsRead = 0;
let bytes = 0;
let refused = 0;

/** One replay from 0 until `events` events (or the end of the run). */
async function replay(): Promise<void> {
  const ac = new AbortController();
  const stop = setTimeout(() => ac.abort(), Math.max(0, until - Date.now()));
  try {
    const r = await fetch(`${base}/events`, { headers: { "x-auth-token": token!, accept: "text/event-stream", "last-event-id": "0" }, signal: ac.signal });
    if (r.status !== 200 || !r.body) {
      refused++;
      await r.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 100));
      return;
    }
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let seen = 0;
    let rest = "";
    while (seen < events) {
      const { value, done } = await reader.read();
      if (done) break;
      bytes += value.length;
      const text = rest + decoder.decode(value, { stream: true });
      const lines = text.split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) if (line.startsWith("id: ")) seen++;
    }
    eventsRead += seen;
    if (seen >= events) replays++;
    ac.abort();
  } catch {
    // The run's end aborts the replay under way.
  } finally {
    clearTimeout(stop);
  }
}

await Promise.all(
  Array.from({ length: clients }, async () => {
    while (Date.now() < until) await replay();
  }),
);
process.stdout.write(`${JSON.stringify({ replays, events: eventsRead, bytes, refused })}\n`);
