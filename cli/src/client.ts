// HTTP to the gateway, and the CLI's exit statuses: 1 when the API refuses (the error body as one
// line and each violation), 3 when the gateway cannot be reached.
import { load } from "./config.ts";

export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}

interface ErrorBody {
  message?: string;
  code?: number;
  violations?: { property: string; message: string }[];
}

/** One readable line, then each violation. */
function describe(status: number, text: string): string {
  let body: ErrorBody = {};
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    /* not the error body */
  }
  const lines = [`error ${status}: ${body.message ?? (text || "no message")}`];
  for (const v of body.violations ?? []) lines.push(`  ${v.property}: ${v.message}`);
  return lines.join("\n");
}

export async function request(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const h: Record<string, string> = { accept: "application/json", ...headers };
  const token = load().token;
  if (token && !h["authorization"]) h["x-auth-token"] = token;
  if (body !== undefined) h["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, { method, headers: h, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  } catch (err) {
    throw new CliError(`cannot reach the gateway at ${base}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`, 3);
  }
  if (res.status >= 400) throw new CliError(describe(res.status, await res.text()), 1);
  return res;
}
