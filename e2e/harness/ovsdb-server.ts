// A real OVSDB server holding a hardware_vtep database (Debian's openvswitch-vtep), on a free
// loopback port, for the VTEP tests; vtep-ctl configures its physical switch as a device's
// operator would.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitFor } from "./harness.ts";

const SCHEMA = "/usr/share/openvswitch/vtep.ovsschema";

export class OvsdbServer {
  readonly dir = mkdtempSync(join(tmpdir(), "vnm-ovsdb-"));
  port = 0;
  private proc: ChildProcess | undefined;

  /** A fresh database file; fails saying what to install when the tools are missing. */
  static async create(): Promise<OvsdbServer> {
    if (!existsSync(SCHEMA)) throw new Error(`${SCHEMA} is missing: install Debian's openvswitch-vtep (.ci/run does)`);
    const s = new OvsdbServer();
    execFileSync("ovsdb-tool", ["create", join(s.dir, "vtep.db"), SCHEMA]);
    s.port = await freePort();
    await s.start();
    return s;
  }

  /** Starts the server (again) on its port, with the same database. */
  async start(): Promise<void> {
    this.proc = spawn("ovsdb-server", [`--remote=ptcp:${this.port}:127.0.0.1`, `--unixctl=${join(this.dir, "ctl")}`, "--no-chdir", join(this.dir, "vtep.db")], {
      stdio: "ignore",
    });
    await waitFor(`ovsdb-server on ${this.port}`, async () => {
      try {
        this.ctl("list", "Global");
        return true;
      } catch {
        return false;
      }
    });
  }

  async stop(): Promise<void> {
    const p = this.proc;
    // Stopped before (exited, or ended by a signal): nothing to wait for.
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once("exit", () => resolve());
      p.kill("SIGTERM");
    });
  }

  /** vtep-ctl against this server. */
  ctl(...args: string[]): string {
    return execFileSync("vtep-ctl", [`--db=tcp:127.0.0.1:${this.port}`, "--timeout=5", ...args], { encoding: "utf8" });
  }

  /** Established client sessions on the server's port. */
  sessions(): number {
    return execFileSync("ss", ["-Htn", "state", "established", `( sport = :${this.port} )`], { encoding: "utf8" }).split("\n").filter(Boolean).length;
  }

  /** The pids of the processes holding a client session with this server. */
  clientPids(): number[] {
    const out = execFileSync("ss", ["-Htnp", "state", "established", `( dport = :${this.port} )`], { encoding: "utf8" });
    return [...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
