// A secret the command line needs and no flag gave (a new user's password): asked at a prompt
// without echo when standard input is a terminal (@inquirer/password, the prompt on stderr), else
// read from standard input, its first line (`printf %s "$PW" | vnm user create --name bob`).
import password from "@inquirer/password";
import { usage } from "./errors.ts";
import { readStdin } from "./stdin.ts";

export async function askSecret(what: string, flag: string): Promise<string> {
  if (process.stdin.isTTY) {
    try {
      return await password({ message: `${what[0]!.toUpperCase()}${what.slice(1)}:`, mask: false }, { output: process.stderr });
    } catch {
      throw usage("cancelled");
    }
  }
  const line = (await readStdin()).split(/\r?\n/)[0] ?? "";
  if (line === "") throw usage(`no ${what}: give ${flag}, type it at the prompt on a terminal, or pipe it on standard input`);
  return line;
}
