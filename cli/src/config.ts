// Where the CLI keeps its login: $XDG_CONFIG_HOME/vnm/config.json (or ~/.config/vnm), mode 600.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export interface Saved {
  url?: string;
  token?: string;
}

function file(): string {
  const base = process.env["XDG_CONFIG_HOME"] || join(homedir(), ".config");
  return join(base, "vnm", "config.json");
}

export function load(): Saved {
  const f = file();
  if (!existsSync(f)) return {};
  try {
    return JSON.parse(readFileSync(f, "utf8")) as Saved;
  } catch {
    return {};
  }
}

export function save(saved: Saved): void {
  const f = file();
  mkdirSync(join(f, ".."), { recursive: true, mode: 0o700 });
  writeFileSync(f, JSON.stringify(saved, null, 2), { mode: 0o600 });
  chmodSync(f, 0o600);
}

/** The gateway: --url, else VNM_URL, else the one logged in to, else the local default. */
export function gatewayUrl(flag?: string): string {
  return (flag || process.env["VNM_URL"] || load().url || "http://127.0.0.1:8080").replace(/\/$/, "");
}
