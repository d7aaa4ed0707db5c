// Clients that ask for a large answer and never read it (docs/operations.md, "The HTTP edge"):
// a user has at most VNM_REQUESTS_PER_USER requests under way at a gateway (beyond, 429), and
// what the gateway wrote to a connection must have left it within VNM_WRITE_DEADLINE_MS, else
// the connection is cut. A real gateway process and real services, 3,000 bridges, 40 sockets
// that send `GET /bridges` and never read: the gateway's memory stays bounded, the sockets
// holding answers are cut at the deadline, and another user is served all along.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { createConnection } from "node:net";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { ERROR_TYPE, expectError, httpClient, Stack, waitFor } from "@vnm/e2e/harness";

const DEADLINE_MS = 5_000;
const PER_USER = 8;
/** Enough for an answer (4.8 MB) larger than what the kernel takes of a connection that is not read (4 MiB at most here): the rest waits in the gateway. */
const BRIDGES = 3_000;
const SOCKETS = 40;

const stack = new Stack();
let gw = "";
let pid = 0;
let other = "";
const otherPassword = randomBytes(16).toString("hex");
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The gateway process's resident memory, in MiB. */
function rssMiB(): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

/** The gateway's own ends of its connections that are open (ESTABLISHED) with bytes the network has not taken yet (Linux's /proc/net/tcp). */
function stuckConnections(): number {
  const port = Number(new URL(gw).port);
  let n = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5) continue;
      const localPort = Number.parseInt(f[1]!.split(":")[1]!, 16);
      const txQueue = Number.parseInt(f[4]!.split(":")[0]!, 16);
      if (localPort === port && f[3] === "01" && txQueue > 0) n++;
    }
  }
  return n;
}

/**
 * The clients: sockets with a small receive buffer (4 KiB, set before they connect; Node cannot
 * set one) that each send `GET /bridges` and read nothing until told to on standard input. Then
 * each is read until its answer is whole (its Content-Length, or its last chunk) or its
 * connection ends (6 s at most); all are described on one JSON line: status, whether the
 * answer came whole, how the reading ended.
 */
const CLIENTS = String.raw`
import json, selectors, socket, sys, time
host, port, n, token = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
request = ("GET /bridges HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nX-Auth-Token: %s\r\n\r\n" % token).encode()
socks = []
for _ in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, port))
    s.sendall(request)
    socks.append(s)
print("sent", flush=True)
sys.stdin.readline()
sel = selectors.DefaultSelector()
got = {}
for s in socks:
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
    got[s] = [b"", None]
def whole(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep: return False
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"): return len(body) >= int(line.split(b":")[1])
    return body.endswith(b"\r\n0\r\n\r\n")
until = time.time() + 6
while sel.get_map() and time.time() < until:
    for key, _ in sel.select(timeout=0.2):
        s = key.fileobj
        try:
            d = s.recv(1 << 20)
            end = None if d else "eof"
        except ConnectionResetError:
            d, end = b"", "reset"
        got[s][0] += d
        if end is None and whole(got[s][0]): end = "whole"
        if end:
            got[s][1] = end
            sel.unregister(s)
out = []
for s in socks:
    data, end = got[s]
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    status = int(lines[0].split(" ")[1]) if lines[0].startswith("HTTP/1.1 ") else 0
    headers = dict((l.split(":", 1)[0].lower(), l.split(":", 1)[1].strip()) for l in lines[1:] if ":" in l)
    out.append({"status": status, "whole": whole(data), "end": end or "open", "type": headers.get("content-type"), "retryAfter": headers.get("retry-after")})
print(json.dumps(out), flush=True)
`;

interface Seen {
  status: number;
  whole: boolean;
  end: "whole" | "eof" | "reset" | "open";
  type?: string;
  retryAfter?: string;
}

/** Starts the clients; resolves once every request is sent, with a function that reads them all. */
async function neverReading(token: string, n: number): Promise<() => Promise<Seen[]>> {
  const { hostname, port } = new URL(gw);
  const child = spawn("python3", ["-c", CLIENTS, hostname, port, String(n), token], { stdio: ["pipe", "pipe", "inherit"] });
  onTestFinished(() => void child.kill());
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  await waitFor("the clients' requests", async () => out.startsWith("sent\n"), 30_000);
  return async () => {
    child.stdin.end("read\n");
    await new Promise((r) => child.once("exit", r));
    return JSON.parse(out.slice("sent\n".length)) as Seen[];
  };
}

beforeAll(async () => {
  await stack.startServices("identity", "bridge");
  gw = await stack.startGateway({ VNM_WRITE_DEADLINE_MS: String(DEADLINE_MS), VNM_REQUESTS_PER_USER: String(PER_USER), VNM_RATE_LIMIT: "0" }, false);
  pid = stack.procs.at(-1)!.child.pid!;
  for (let i = 0; i < BRIDGES; i += PER_USER) {
    const batch = Array.from({ length: Math.min(PER_USER, BRIDGES - i) }, (_, j) => http("POST", "/bridges", { name: `slow-${i + j}-${"x".repeat(240)}` }));
    for (const r of await Promise.all(batch)) expect(r.status).toBe(201);
  }
  const user = await http("POST", "/users", { name: `other-${stack.id}`, password: otherPassword, tenantId: `T-${stack.id}`, roles: ["tenant_admin"] });
  expect(user.status).toBe(201);
  other = await stack.login(gw, `other-${stack.id}`, otherPassword);
}, 180_000);

afterAll(async () => {
  await stack.stop();
});

describe("clients that never read their answers", () => {
  it("hold at most the user's places, are cut at the deadline, and leave the gateway's memory bounded; another user is served meanwhile", async () => {
    // The list is cached and answered once before, as an attacker would find it.
    const whole = await http("GET", "/bridges");
    expect(whole.status).toBe(200);
    expect(whole.json).toHaveLength(BRIDGES);
    const before = rssMiB();
    const started = performance.now();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMiB());
    }, 100);
    onTestFinished(() => clearInterval(sampler));
    const read = await neverReading(stack.adminToken, SOCKETS);
    // Only the user's places hold answers (each waiting in the gateway); the rest were refused.
    const filled = async () => stuckConnections() >= PER_USER;
    await waitFor("the answers of the user's places to fill their connections", filled, 3_000).catch(() => {});
    const stuck = stuckConnections();
    // Another user is served while they hang; the same user is refused, with the error body.
    const served = performance.now();
    const theirs = await http("GET", "/bridges", undefined, { "x-auth-token": other });
    expect(theirs.status).toBe(200);
    expect(performance.now() - served).toBeLessThan(2_500);
    const refused = await http("GET", "/bridges");
    expectError(refused, 429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // Past the deadline (and the once-a-second look), the gateway has cut every connection it could not write to.
    await sleep(Math.max(0, DEADLINE_MS + 3_000 - (performance.now() - started)));
    expect(stuckConnections()).toBe(0);
    // Their places are free again.
    expect((await http("GET", "/bridges")).status).toBe(200);
    clearInterval(sampler);
    expect(stuck).toBe(PER_USER);
    console.log(`gateway RSS: ${before.toFixed(0)} MiB before, at most ${peak.toFixed(0)} MiB with ${SOCKETS} sockets not reading, ${rssMiB().toFixed(0)} MiB after the deadline`);
    expect(peak - before).toBeLessThan(120);
    // What the clients see when they finally read: a cut answer for those that held a place (what
    // the kernel still held of it arrives at TCP's pace, then the end), a 429 for the others.
    const answers = await read();
    const cut = answers.filter((a) => a.status === 200);
    expect(cut.length).toBeGreaterThan(0);
    expect(cut.length).toBeLessThanOrEqual(PER_USER);
    for (const a of cut) expect(a.whole).toBe(false);
    const others = answers.filter((a) => a.status !== 200);
    expect(others).toHaveLength(SOCKETS - cut.length);
    for (const a of others) expect(a).toMatchObject({ status: 429, whole: true, end: "whole", type: ERROR_TYPE, retryAfter: "1" });
  }, 60_000);

  it("a client that hangs up while its token is being checked takes no place away", async () => {
    // New tokens: each is verified before its request may hold a place, and the client is gone by then.
    const tokens: string[] = [];
    for (let i = 0; i < 3 * PER_USER; i++) tokens.push(await stack.login(gw, `other-${stack.id}`, otherPassword));
    const { hostname, port } = new URL(gw);
    await Promise.all(
      tokens.map(
        (token) =>
          new Promise<void>((resolve) => {
            const socket = createConnection(Number(port), hostname, () => {
              socket.write(`GET /bridges HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nX-Auth-Token: ${token}\r\n\r\n`, () => socket.destroy());
            });
            socket.on("error", () => {});
            socket.on("close", () => resolve());
          }),
      ),
    );
    await sleep(1_000);
    // Every place of the user's is free: as many requests at once as the cap are all answered.
    const answers = await Promise.all(Array.from({ length: PER_USER }, () => http("GET", "/", undefined, { "x-auth-token": other })));
    expect(answers.map((r) => r.status)).toEqual(Array(PER_USER).fill(200));
  }, 60_000);
});
