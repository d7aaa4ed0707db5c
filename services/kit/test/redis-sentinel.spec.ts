// A Redis client through Sentinels (connectRedis with a redis-sentinel:// URL) after ioredis 6.0
// ended it: when the Sentinels announce a new primary (+switch-master) while the client is still
// asking them for one, ioredis ends the client for good ("Connection is closed."). That happens
// when a host with the primary and a Sentinel goes at once: the client's reconnection waits on the
// lost Sentinel while the others fail over. keepConnecting (limits.ts) connects such a client
// again. Real redis-server and redis-sentinel processes of the test's own (a primary, a replica, a
// Sentinel); the Sentinel is reached through a TCP proxy that holds new connections unanswered
// (the lost host's Sentinel) while those already open (the failover detector's subscription) go
// on.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket, connect as tcp } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { connectRedis } from "../src/limits.ts";
import { freePort, type Proc, startProcess, waitFor } from "../src/testing.ts";

const which = (cmd: string) => {
  try {
    return execFileSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
};
const REDIS = which("redis-server");
const SENTINEL = which("redis-sentinel");
const NAME = "vnmtest";

/** A TCP proxy to the Sentinel: while `holding`, a new connection is accepted and never answered; open ones go on. */
class SentinelDoor {
  holding = false;
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  async open(port: number, target: number): Promise<void> {
    this.server = createServer((client) => {
      this.sockets.add(client);
      client.on("error", () => {});
      client.on("close", () => this.sockets.delete(client));
      if (this.holding) return;
      const upstream = tcp(target, "127.0.0.1");
      this.sockets.add(upstream);
      upstream.on("error", () => {});
      upstream.on("close", () => this.sockets.delete(upstream));
      client.pipe(upstream);
      upstream.pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((r) => this.server!.listen(port, "127.0.0.1", () => r()));
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }
}

const procs: Proc[] = [];
const dir = mkdtempSync(join(tmpdir(), "vnm-sentinel-"));
const door = new SentinelDoor();
const clients: Redis[] = [];

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await door.close();
  await Promise.all(procs.map((p) => p.stop("SIGKILL")));
  rmSync(dir, { recursive: true, force: true });
});

const plain = (port: number) => {
  const c = new Redis({ port, host: "127.0.0.1", lazyConnect: false, maxRetriesPerRequest: 1 });
  c.on("error", () => {});
  clients.push(c);
  return c;
};

describe.skipIf(!REDIS || !SENTINEL)(`keepConnecting${!REDIS || !SENTINEL ? " (skipped: redis-server and redis-sentinel are not installed)" : ""}`, () => {
  it("a client ioredis ended while it asked the Sentinels during a failover connects again, to the new primary", { timeout: 60_000 }, async () => {
    const [primaryPort, replicaPort, sentinelPort, doorPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const redis = (port: number, ...more: string[]) => startProcess(REDIS, {}, [], ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...more]);
    const primary = redis(primaryPort);
    procs.push(primary, redis(replicaPort, "--replicaof", "127.0.0.1", String(primaryPort)));
    const conf = join(dir, "sentinel.conf");
    writeFileSync(
      conf,
      [`port ${sentinelPort}`, "bind 127.0.0.1", `dir ${dir}`, `sentinel monitor ${NAME} 127.0.0.1 ${primaryPort} 1`, `sentinel down-after-milliseconds ${NAME} 1000`, `sentinel failover-timeout ${NAME} 5000`, ""].join("\n"),
    );
    procs.push(startProcess(SENTINEL, {}, [], [conf]));
    const replica = plain(replicaPort);
    await waitFor("the replica in sync", async () => /master_link_status:up/.test(await replica.info("replication")));
    const sentinel = plain(sentinelPort);
    const asked = async (): Promise<string[]> => (await sentinel.call("SENTINEL", "get-master-addr-by-name", NAME)) as string[];
    await waitFor("the Sentinel to know the replica", async () => ((await sentinel.call("SENTINEL", "replicas", NAME)) as unknown[]).length === 1);
    await door.open(doorPort, sentinelPort);

    const client = connectRedis(`redis-sentinel://127.0.0.1:${doorPort}/${NAME}`);
    clients.push(client);
    let ended = 0;
    client.on("end", () => ended++);
    await waitFor("the client ready", async () => client.status === "ready");
    expect(await client.set("k", "before")).toBe("OK");
    // The failover detector's subscription to +switch-master is open through the door.
    await waitFor("the failover detector subscribed", async () => /sub=1/.test((await sentinel.call("CLIENT", "LIST")) as string));

    // The primary's host goes, and with it the Sentinel the client asks: its reconnection waits
    // on that Sentinel while the one still up fails over to the replica.
    door.holding = true;
    await primary.stop("SIGKILL");
    await waitFor("the failover", async () => (await asked())[1] === String(replicaPort), 30_000);
    // ioredis 6.0 ends the client on the announcement (if it no longer does, keepConnecting may go).
    await waitFor("ioredis to end the client", async () => ended > 0, 10_000);

    // The Sentinel answers again: the client connects, to the new primary.
    door.holding = false;
    await waitFor("the client ready again", async () => client.status === "ready", 15_000);
    expect(await client.set("k", "after")).toBe("OK");
    expect(await replica.get("k")).toBe("after");
  });
});
