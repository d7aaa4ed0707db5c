// vnm events: prints each change of /events as one line, and when the stream ends or breaks,
// reconnects after a second with Last-Event-ID, so nothing is missed.
import { CliError, request } from "./client.ts";
import { gatewayUrl } from "./config.ts";

/** Reads one connection's events; returns the last event id seen. */
async function stream(base: string, last: string | undefined): Promise<string | undefined> {
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (last) headers["last-event-id"] = last;
  const res = await request(base, "GET", "/events", undefined, headers);
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
      const fields = Object.fromEntries(
        buffer
          .slice(0, i)
          .split("\n")
          .filter((l) => !l.startsWith(":") && l.includes(":"))
          .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]),
      );
      buffer = buffer.slice(i + 2);
      if (!fields["data"]) continue;
      const d = JSON.parse(fields["data"]) as { kind: string; id: string; uri: string };
      last = fields["id"] ?? last;
      process.stdout.write(`${fields["id"]}\t${fields["event"]}\t${d.kind}\t${d.id}\t${d.uri}\n`);
    }
  }
  return last;
}

export async function follow(url: string | undefined, from?: string): Promise<void> {
  const base = gatewayUrl(url);
  let last = from;
  for (;;) {
    try {
      last = await stream(base, last);
    } catch (err) {
      // A refusal (401, 400) will not get better by retrying; a lost connection will.
      if (err instanceof CliError && err.exitCode === 1) throw err;
    }
    await new Promise((r) => setTimeout(r, 1_000));
  }
}
