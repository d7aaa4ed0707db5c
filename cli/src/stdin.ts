// Standard input read as any Unix tool reads it: as a stream, to its end, whatever the producer's
// pace (a pipe from a slow command, a terminal, a file). Reading fd 0 at once (readFileSync) fails
// with EAGAIN on a non-blocking pipe whose writer has not written yet.
// Standard output and error closed early by their reader (`vnm bridge list | head -1`): the rest
// is dropped and the CLI ends quietly with 141 (128 + SIGPIPE), as a tool killed by SIGPIPE does.

/** The whole of standard input as text (UTF-8). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** Ends quietly when the reader of stdout or stderr has gone (EPIPE), instead of a stack trace. */
export function quietOnClosedPipes(): void {
  for (const s of [process.stdout, process.stderr]) {
    s.on("error", (err: NodeJS.ErrnoException) => {
      process.exit(err.code === "EPIPE" ? 141 : 1);
    });
  }
}
