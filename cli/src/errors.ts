// The CLI's exit statuses: 0 done, 1 the API refused, 2 a usage error, 3 the gateway cannot be
// reached. A CliError carries its status and the one line (or lines) for stderr.
export class CliError extends Error {
  readonly exitCode: number;
  /** The HTTP status of a refusal. */
  readonly status: number | undefined;
  constructor(message: string, exitCode: number, status?: number) {
    super(message);
    this.exitCode = exitCode;
    this.status = status;
  }
}

export const usage = (message: string) => new CliError(message, 2);
