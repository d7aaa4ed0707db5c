// MidoNet's own python client (python-midonetclient) drives the topology end to end against the
// real stack: e2e/midonetclient/drive.py builds routers, ports, links, routes, a bridge's ARP
// entries, a host in tunnel zones and a port bound to it, a load balancer's pool members and VIP,
// a QoS policy's rules and a VTEP binding with the client's calls, checks each answer and
// deletes it all again. The client is not in this repository (nor on npm or in
// Debian): VNM_MIDONETCLIENT names its `src` folder (the one holding `midonetclient/`), and the
// test is skipped, saying so, when it is not set. VNM_PYTHON names the interpreter (default
// python3), which needs Debian's python3-httplib2 and python3-webob. See e2e/README.md.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { describe, expect, it } from "vitest";
import { useStack } from "../harness/harness.ts";
import { OvsdbServer } from "../harness/ovsdb-server.ts";

const client = process.env["VNM_MIDONETCLIENT"] ?? "";
const python = process.env["VNM_PYTHON"] ?? "python3";
const driver = join(import.meta.dirname, "..", "midonetclient", "drive.py");
const why = "VNM_MIDONETCLIENT is not set: it names python-midonetclient's src folder (see e2e/README.md)";

/** Runs the driver; its output and exit status. */
function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, PYTHONPATH: [client, process.env["PYTHONPATH"]].filter(Boolean).join(delimiter), PYTHONUNBUFFERED: "1" };
    const p = spawn(python, [driver, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("error", reject);
    p.on("close", (code) => resolve({ code, out, err }));
  });
}

describe("python-midonetclient", () => {
  if (client === "") {
    it.skip(why, () => {});
    return;
  }
  const fx = useStack();

  it("finds the client where VNM_MIDONETCLIENT says", () => {
    expect(existsSync(join(client, "midonetclient", "api.py")), `${client}/midonetclient/api.py`).toBe(true);
  });

  it("drives routers, ports, links, routes, ARP entries, hosts, tunnel zone hosts, bindings, pool members, VIPs, QoS rules and a VTEP binding, and cleans up", async () => {
    // The VTEP: an OVSDB server with one switch and one port, as vtep-bindings.e2e has it.
    const device = await OvsdbServer.create();
    device.ctl("add-ps", "sw-pmc");
    device.ctl("set", "Physical_Switch", "sw-pmc", "management_ips=127.0.0.1", "tunnel_ips=10.8.9.1");
    device.ctl("add-port", "sw-pmc", "eth0");
    const r = await run([fx.gw, "admin", fx.stack.adminPassword, String(device.port)]).finally(() => device.stop());
    const report = `exit ${r.code}\n--- stdout\n${r.out}\n--- stderr\n${r.err}`;
    expect(r.code, report).toBe(0);
    expect(r.err, report).not.toMatch(/Traceback/);
    expect(r.out, report).toMatch(/^RESULT calls=\d+ checks=\d+ ok$/m);
    console.log(r.out.trim());
  }, 120_000);
});
