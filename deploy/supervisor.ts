// The processes of `npm start -- --split`: every part (a service, the gateway) runs as `replicas`
// processes, each replaced whenever it exits unless the supervisor is stopping. A rolling restart
// replaces them one at a time, each only once its replacement says it is ready (the kit's
// announceReady, over the IPC channel), so the part never stops answering.
//
// A service's processes listen on ports of their own, named in advance in its VNM_<DOMAIN>_ADDR
// list (the slots): one more slot than replicas leaves a spare, where a replacement starts while
// the process it replaces still answers. The gateway's processes all listen on PORT
// (VNM_REUSE_PORT), so a replacement needs no slot.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { NODE_FLAGS, READY_MESSAGE, ROOT, runtimeEnv } from "@vnm/kit/repo";
/** How long a replacement may take to become ready before a rolling restart gives up on it. */
const READY_MS = 60_000;

export interface Part {
  name: string;
  script: string;
  env: NodeJS.ProcessEnv;
  replicas: number;
  /** The GRPC_PORT of each process (a service), at least `replicas` of them; none for the gateway. */
  slots?: string[];
}

interface Running {
  part: Part;
  child: ChildProcess;
  slot?: string;
  /** Resolves true once the process is ready, false if it exits first. */
  ready: Promise<boolean>;
  /** Stopped on purpose (replaced, or the supervisor stopping): not to be replaced when it exits. */
  retiring: boolean;
}

const gone = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

export class Supervisor {
  private readonly running = new Set<Running>();
  /** Slots whose process exited and waits to be started again (not spare meanwhile). */
  private readonly restarting = new Set<string>();
  private readonly failures = new Map<Part, number>();
  private readonly parts: Part[] = [];
  private stopping = false;
  private rolling = false;
  private readonly say: (msg: string) => void;

  constructor(say: (msg: string) => void) {
    this.say = say;
  }

  /** Starts every process of a part. */
  start(part: Part): void {
    if ((part.slots?.length ?? part.replicas) < part.replicas) throw new Error(`${part.name}: fewer ports than replicas`);
    this.parts.push(part);
    for (let i = 0; i < part.replicas; i++) this.spawn(part, part.slots?.[i]);
  }

  private spawn(part: Part, slot: string | undefined): Running {
    const env = { ...runtimeEnv(part.env), ...part.env, ...(slot === undefined ? {} : { GRPC_PORT: slot }) };
    // The IPC channel: the child hears when this process dies (it stops), and says when it is ready.
    const child = spawn(process.execPath, [...NODE_FLAGS, part.script], { cwd: ROOT, env, stdio: ["inherit", "inherit", "inherit", "ipc"] });
    const ready = new Promise<boolean>((resolve) => {
      child.on("message", (m) => m === READY_MESSAGE && resolve(true));
      child.once("exit", () => resolve(false));
    });
    const proc: Running = { part, child, slot, ready, retiring: false };
    this.running.add(proc);
    void ready.then((ok) => ok && this.failures.delete(part));
    child.once("exit", (code, signal) => this.exited(proc, code ?? signal));
    return proc;
  }

  /** A process that exited on its own is started again, later the more often its part failed. */
  private exited(proc: Running, how: number | string | null): void {
    this.running.delete(proc);
    if (this.stopping || proc.retiring) return;
    const failures = (this.failures.get(proc.part) ?? 0) + 1;
    this.failures.set(proc.part, failures);
    const delay = Math.min(500 * failures, 5_000);
    this.say(`${proc.part.name} exited (${how}); starting another in ${delay} ms`);
    if (proc.slot !== undefined) this.restarting.add(proc.slot);
    setTimeout(() => {
      if (proc.slot !== undefined) this.restarting.delete(proc.slot);
      if (!this.stopping) this.spawn(proc.part, proc.slot);
    }, delay);
  }

  /** Stops one process (SIGTERM: it drains) and waits until it is gone. */
  private async retire(proc: Running): Promise<void> {
    proc.retiring = true;
    if (gone(proc.child)) return;
    const exited = once(proc.child, "exit");
    proc.child.kill("SIGTERM");
    await exited;
  }

  private spareSlot(part: Part): string | undefined {
    const used = new Set([...this.running].filter((p) => p.part === part).map((p) => p.slot));
    return part.slots?.find((s) => !used.has(s) && !this.restarting.has(s));
  }

  /** Replaces one process: its replacement first, ready, then the old one stops (or the other way round with no spare slot). */
  private async replace(old: Running): Promise<boolean> {
    const { part } = old;
    const spare = this.spareSlot(part);
    if (old.slot !== undefined && spare === undefined) {
      await this.retire(old);
      return this.spawn(part, old.slot).ready;
    }
    const started = Date.now();
    const next = this.spawn(part, spare);
    const timeout = new Promise<boolean>((r) => setTimeout(() => r(false), READY_MS).unref());
    if (!(await Promise.race([next.ready, timeout]))) {
      if (this.stopping) return false;
      this.say(`${part.name}: the replacement did not become ready; the process it was to replace keeps running`);
      await this.retire(next);
      return false;
    }
    const ready = Date.now();
    await this.retire(old);
    this.say(`${part.name}: replaced (ready in ${ready - started} ms, the old one drained in ${Date.now() - ready} ms)`);
    return true;
  }

  /** Replaces every process, one at a time, in the order the parts started; a second call meanwhile is ignored. */
  async roll(): Promise<void> {
    if (this.rolling || this.stopping) return;
    this.rolling = true;
    const before = [...this.running].sort((a, b) => this.parts.indexOf(a.part) - this.parts.indexOf(b.part));
    this.say(`rolling restart of ${before.length} processes, one at a time`);
    let replaced = 0;
    try {
      for (const old of before) {
        if (this.stopping) return;
        // One that exited meanwhile was replaced already.
        if (this.running.has(old) && (await this.replace(old))) replaced++;
      }
      this.say(`rolling restart done: ${replaced} of ${before.length} processes replaced`);
    } finally {
      this.rolling = false;
    }
  }

  /** Stops every process, the parts in the reverse order of their start (the gateway before the services it calls). */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const part of [...this.parts].reverse()) {
      await Promise.all([...this.running].filter((p) => p.part === part).map((p) => this.retire(p)));
    }
  }
}
