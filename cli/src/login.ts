// vnm login: HTTP Basic at /login; the password from VNM_PASSWORD, or asked without echo.
// vnm logout: POST /logout ends every token of the user (on every gateway), and the kept one is dropped.
import { stdin, stdout } from "node:process";
import { createInterface } from "node:readline";
import { request } from "./client.ts";
import { gatewayUrl, load, save } from "./config.ts";

/** Reads a line from a terminal without echoing it. */
function askPassword(): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: stdin, output: stdout, terminal: true });
    const out = rl as unknown as { _writeToOutput: (s: string) => void };
    stdout.write("Password: ");
    out._writeToOutput = () => {};
    rl.question("", (answer) => {
      rl.close();
      stdout.write("\n");
      resolve(answer);
    });
  });
}

export async function login(url: string | undefined, user: string, project?: string): Promise<void> {
  const base = gatewayUrl(url);
  const password = process.env["VNM_PASSWORD"] ?? (await askPassword());
  const headers: Record<string, string> = { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` };
  if (project) headers["x-auth-project"] = project;
  const res = await request(base, "POST", "/login", undefined, headers);
  const { key, expires } = (await res.json()) as { key: string; expires: string };
  save({ url: base, token: key });
  process.stderr.write(`logged in to ${base} as ${user} until ${expires}\n`);
}

export async function logout(url: string | undefined): Promise<void> {
  const base = gatewayUrl(url);
  const saved = load();
  if (!saved.token) {
    process.stderr.write("not logged in\n");
    return;
  }
  await request(base, "POST", "/logout");
  save({ url: saved.url });
  process.stderr.write(`logged out of ${base}: every token of this user has ended\n`);
}
