// The CLI's second pass (issue 55), as an operator runs it: the installed bin as a subprocess from
// /tmp under the machine's Node, in real shells' pipes, against a real stack (the gateway's test
// harness): standard input from a slow producer, a reader that leaves early, parents by name,
// the items a field names by name (flags and files), subnets by their key, apply without ids
// (natural keys), every document checked first (a bad value too, by a server dry run), diff,
// delete -f in dependency order, -o jsonpath, --sort-by, plurals and short names, tables in a
// pipe, a new user's password at a prompt or on standard input, and apply's --dry-run and --prune.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { ROOT, Stack, waitFor } from "@vnm/e2e/harness";

const fx = { stack: new Stack(), gw: "" };
const home = mkdtempSync(join(tmpdir(), "vnm-cli-files-"));
const BIN = join(ROOT, "node_modules", ".bin", "vnm");
const NODE = existsSync("/usr/bin/node") ? "/usr/bin/node" : process.execPath;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  PATH: `${dirname(NODE)}:/usr/bin:/bin`,
  HOME: home,
  XDG_CONFIG_HOME: join(home, "config"),
  VNM_URL: fx.gw,
  VNM: BIN,
  ...extra,
});

function collect(command: string, args: string[], extra: NodeJS.ProcessEnv = {}, input = ""): Promise<Run> {
  const child = spawn(command, args, { cwd: tmpdir(), env: env(extra), stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.end(input);
  const run: Run = { status: null, stdout: "", stderr: "" };
  child.stdout.on("data", (d: Buffer) => {
    run.stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    run.stderr += d.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ ...run, status: code })));
}

/** `vnm ...`, stdout and stdin pipes (no terminal). */
const vnm = (args: string[], input = "", extra: NodeJS.ProcessEnv = {}) => collect(BIN, args, extra, input);
/** A bash command line, with the bin as $VNM. */
const bash = (line: string) => collect("bash", ["--norc", "--noprofile", "-c", line]);

async function ok(args: string[], input = ""): Promise<string> {
  const r = await vnm(args, input);
  expect(r.status, `vnm ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

const NO_STACK = /^\s+at |Error:|node:internal|EAGAIN|EPIPE/m;

beforeAll(async () => {
  // The policy service: a bridge's filters name its chains.
  await fx.stack.startServices("bridge", "identity", "policy");
  fx.gw = await fx.stack.startGateway({}, false);
  const r = await vnm(["login", "--user", "admin"], "", { VNM_PASSWORD: fx.stack.adminPassword });
  expect(r.status, r.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  await fx.stack.stop();
  rmSync(home, { recursive: true, force: true });
});

describe("pipes", () => {
  it("apply -f - reads a slow producer's documents to their end, and an item printed by get -o yaml applies as unchanged", async () => {
    const file = join(home, "slow.yaml");
    writeFileSync(file, "kind: bridge\nname: lab2\ntenantId: pipes\n---\nkind: bridge\nname: lab3\ntenantId: pipes\n");
    const slow = await bash(`(sleep 1; cat ${file}) | "$VNM" apply -f -`);
    expect(slow.stderr).not.toMatch(NO_STACK);
    expect(slow.status, slow.stderr).toBe(0);
    expect(slow.stdout).toMatch(/^bridge\/\S+ created\nbridge\/\S+ created\n$/);
    // The operator's round trip: an item as the API shows it (no kind:, its uri says it) goes back unchanged.
    const id = (await ok(["bridge", "get", "lab2", "-o", "jsonpath={.id}"])).trim();
    const round = await bash(`"$VNM" bridge get lab2 -o yaml | (sleep 1; cat) | "$VNM" apply -f -`);
    expect(round.stderr).not.toMatch(NO_STACK);
    expect([round.status, round.stdout]).toEqual([0, `bridge/${id} unchanged\n`]);
    // Changed on the way, it is an update of that item.
    const changed = await bash(`"$VNM" bridge get lab2 -o yaml | sed 's/^adminStateUp: true/adminStateUp: false/' | "$VNM" apply -f -`);
    expect([changed.status, changed.stdout]).toEqual([0, `bridge/${id} updated\n`]);
    expect(parseYaml(await ok(["bridge", "get", id, "-o", "yaml"])).adminStateUp).toBe(false);
  });

  it("a reader that leaves early (head -1) ends the CLI quietly: no EPIPE, no stack, status 141 as SIGPIPE's", async () => {
    // More than a pipe holds (64 KiB), so the CLI is still writing when head leaves; in batches
    // (the gateway runs at most 64 requests of a user at once).
    const made: Response[] = [];
    for (let batch = 0; batch < 6; batch++) {
      made.push(
        ...(await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            fetch(`${fx.gw}/bridges`, {
              method: "POST",
              headers: { "x-auth-token": fx.stack.adminToken, "content-type": "application/json" },
              body: JSON.stringify({ name: `many-${batch}-${i}-${"m".repeat(240)}`, tenantId: "many" }),
            }),
          ),
        )),
      );
    }
    expect(made.map((r) => r.status).filter((s) => s !== 201)).toEqual([]);
    const r = await bash(`"$VNM" bridge list --tenant many -o json | head -1; echo "status \${PIPESTATUS[0]}" >&2`);
    expect(r.stdout).toBe("[\n");
    expect(r.stderr).toBe("status 141\n");
    // The table (cut to 120 columns) may fit in the pipe whole: quiet either way.
    const table = await bash(`"$VNM" bridge list --tenant many | head -1; echo "status \${PIPESTATUS[0]}" >&2`);
    expect(table.stdout).toMatch(/^ID\s+TENANT_ID\s+NAME\s+ADMIN_STATE_UP\n$/);
    expect(table.stderr).toMatch(/^status (0|141)\n$/);
  });

  it("a table stays a table in a pipe, unless -o says otherwise, and grep finds its rows", async () => {
    const r = await bash(`"$VNM" bridge list --tenant pipes | grep -E '^ID|lab3'`);
    expect(r.status, r.stderr).toBe(0);
    const [header, row] = r.stdout.trimEnd().split("\n");
    expect(header!.split(/\s+/)).toEqual(["ID", "TENANT_ID", "NAME", "ADMIN_STATE_UP"]);
    expect(row).toMatch(/^\S{36}\s+pipes\s+lab3\s+true$/);
    expect(JSON.parse(await ok(["bridge", "list", "--tenant", "pipes", "-o", "json"]))).toHaveLength(2);
  });
});

describe("names and keys", () => {
  it("a parent by its name (--bridge NAME) wherever its id works; a subnet by 10.5.0.0/24 or 10.5.0.0_24, its key shown", async () => {
    const bridge = JSON.parse(await ok(["bridge", "create", "--name", "keys", "--tenant-id", "names", "-o", "json"])).id as string;
    expect(await ok(["dhcp-subnet", "create", "--bridge", "keys", "--subnet-prefix", "10.5.0.0", "--subnet-length", "24", "-o", "name"])).toBe("dhcp-subnet/10.5.0.0_24\n");
    // The key is the first column of the subnet's table, and describe says it.
    const list = (await ok(["dhcp-subnet", "list", "--bridge", "keys"])).split("\n");
    expect(list[0]).toMatch(/^KEY\s+SUBNET_PREFIX\s+SUBNET_LENGTH/);
    expect(list[1]).toMatch(/^10\.5\.0\.0_24\s+10\.5\.0\.0\s+24/);
    expect(await ok(["dhcp-subnet", "describe", "10.5.0.0/24", "--bridge", "keys"])).toMatch(/^Kind:\s+dhcp-subnet\nKey:\s+10\.5\.0\.0_24\n/);
    for (const key of ["10.5.0.0/24", "10.5.0.0_24"]) {
      expect(JSON.parse(await ok(["dhcp-subnet", "get", key, "--bridge", "keys", "-o", "json"]))).toMatchObject({ subnetPrefix: "10.5.0.0", subnetLength: 24 });
    }
    const where = ["--bridge", "keys", "--subnet", "10.5.0.0/24"];
    expect(await ok(["dhcp-host", "create", ...where, "--mac-addr", "02:00:00:00:05:01", "--ip-addr", "10.5.0.5", "--name", "h5", "-o", "name"])).toBe("dhcp-host/02:00:00:00:05:01\n");
    expect(JSON.parse(await ok(["dhcp-host", "list", ...where, "-o", "json"])).map((h: { name: string }) => h.name)).toEqual(["h5"]);
    expect(JSON.parse(await ok(["dhcp-host", "get", "h5", "--bridge", bridge, "--subnet", "10.5.0.0_24", "-o", "json"])).ipAddr).toBe("10.5.0.5");
    // Completion lists the items below parents typed by name as the command finds them.
    expect((await ok(["__complete", "dhcp-host", "get", ...where])).split("\n").sort()).toEqual(["", "02:00:00:00:05:01", "h5"]);
    const missing = await vnm(["dhcp-subnet", "list", "--bridge", "no-such-bridge"]);
    expect([missing.status, missing.stderr]).toEqual([1, 'error 404: no bridge has the id or name "no-such-bridge"\n']);
  });
});

describe("fields naming other items", () => {
  const chain = async (name: string, tenant: string) => JSON.parse(await ok(["chain", "create", "--name", name, "--tenant-id", tenant, "-o", "json"])).id as string;
  const bridge = async (name: string) => JSON.parse(await ok(["bridge", "get", name, "--tenant", "refs", "-o", "json"]));

  const ids = { web: "", other: "" };
  beforeAll(async () => {
    ids.web = await chain("ref-in", "refs");
    // Another tenant's chain of the same name is not a candidate for a bridge of tenant refs.
    ids.other = await chain("ref-in", "refs-other");
  });

  it("takes the item's name where its id goes in a flag, within the item's tenant; a UUID as it is", async () => {
    const { web, other } = ids;
    const made = JSON.parse(await ok(["bridge", "create", "--name", "ref-br", "--tenant-id", "refs", "--inbound-filter-id", "ref-in", "-o", "json"]));
    expect(made.inboundFilterId).toBe(web);
    await ok(["bridge", "update", "ref-br", "--tenant", "refs", "--outbound-filter-id", "ref-in"]);
    expect(await bridge("ref-br")).toMatchObject({ inboundFilterId: web, outboundFilterId: web });
    await ok(["bridge", "update", "ref-br", "--tenant", "refs", "--outbound-filter-id", other]);
    expect((await bridge("ref-br")).outboundFilterId).toBe(other);
    const none = await vnm(["bridge", "create", "--name", "ref-none", "--tenant-id", "refs", "--inbound-filter-id", "no-such-chain"]);
    expect([none.status, none.stdout, none.stderr]).toEqual([1, "", 'error 404: --inbound-filter-id: no chain has the id or name "no-such-chain"\n']);
  });

  it("takes the item's name where its id goes in an apply file, the item made first when the file makes it", async () => {
    const { web } = ids;
    // A file: the bridge first, the chain it names after it; apply makes the chain first, and a
    // second apply finds the name and the id the same.
    const file = [
      "kind: bridge\nname: ref-file\ntenantId: refs\ninboundFilterId: ref-file-in\noutboundFilterId: ref-in",
      "kind: chain\nname: ref-file-in\ntenantId: refs",
    ].join("\n---\n");
    const first = await vnm(["apply", "-f", "-"], file);
    expect([first.status, first.stderr]).toEqual([0, ""]);
    const fileChain = (await ok(["chain", "get", "ref-file-in", "--tenant", "refs", "-o", "jsonpath={.id}"])).trim();
    const b = await bridge("ref-file");
    expect(b).toMatchObject({ inboundFilterId: fileChain, outboundFilterId: web });
    expect(first.stdout).toBe(`chain/${fileChain} created\nbridge/${b.id} created\n`);
    const again = await vnm(["apply", "-f", "-"], file);
    expect([again.status, again.stdout, again.stderr]).toEqual([0, `chain/${fileChain} unchanged\nbridge/${b.id} unchanged\n`, ""]);
    const missing = await vnm(["apply", "-f", "-"], "kind: bridge\nname: ref-file\ntenantId: refs\ninboundFilterId: nope\n");
    expect([missing.status, missing.stdout]).toEqual([1, ""]);
    expect(missing.stderr).toBe('stdin: inboundFilterId: no chain has the id or name "nope", and no document here makes one\nnothing was sent\n');
  });

  it("refuses a name several items have, naming each, in a flag and in a file, and sends nothing", async () => {
    const ids = [await chain("twin", "refs"), await chain("twin", "refs")];
    const lines = (at: string) => new RegExp(`^error: ${at}: 2 chain items are named "twin"; name one by id:\n(  (${ids.join("|")})  \\(tenant refs\\)\n){2}$`);
    const flag = await vnm(["bridge", "create", "--name", "ref-twin", "--tenant-id", "refs", "--inbound-filter-id", "twin"]);
    expect([flag.status, flag.stdout]).toEqual([1, ""]);
    expect(flag.stderr).toMatch(lines("--inbound-filter-id"));
    for (const id of ids) expect(flag.stderr).toContain(id);
    const file = await vnm(["apply", "-f", "-"], "kind: bridge\nname: ref-twin\ntenantId: refs\ninboundFilterId: twin\n");
    expect([file.status, file.stdout]).toEqual([1, ""]);
    expect(file.stderr.replace(/^stdin: /, "").replace(/nothing was sent\n$/, "")).toMatch(lines("inboundFilterId"));
    expect((await vnm(["bridge", "get", "ref-twin", "--tenant", "refs"])).status).toBe(1);
    // By id, either is taken.
    expect(JSON.parse(await ok(["bridge", "create", "--name", "ref-twin", "--tenant-id", "refs", "--inbound-filter-id", ids[1]!, "-o", "json"])).inboundFilterId).toBe(ids[1]);
  });
});

describe("apply, diff and delete -f", () => {
  const net = (up: boolean) =>
    [
      // Children first in the file: apply still makes the parents first.
      "kind: dhcp-host\nbridgeId: tenant-net\nsubnetAddr: 10.6.0.0/24\nname: web\nmacAddr: 02:00:00:00:06:01\nipAddr: 10.6.0.10",
      "kind: dhcp-subnet\nbridgeId: tenant-net\nsubnetPrefix: 10.6.0.0\nsubnetLength: 24",
      `kind: bridge\nname: tenant-net\ntenantId: files\nadminStateUp: ${up}`,
    ].join("\n---\n");
  const file = join(home, "net.yaml");

  it("creates parents first, then is idempotent without ids (natural keys); diff shows what would change", async () => {
    writeFileSync(file, net(true));
    const first = await vnm(["apply", "-f", file]);
    expect(first.status, first.stderr).toBe(0);
    const id = (await ok(["bridge", "get", "tenant-net", "-o", "jsonpath={.id}"])).trim();
    expect(first.stdout).toBe(`bridge/${id} created\ndhcp-subnet/10.6.0.0_24 created\ndhcp-host/02:00:00:00:06:01 created\n`);
    const again = await vnm(["apply", "-f", file]);
    expect([again.status, again.stderr]).toEqual([0, ""]);
    expect(again.stdout).toBe(`bridge/${id} unchanged\ndhcp-subnet/10.6.0.0_24 unchanged\ndhcp-host/02:00:00:00:06:01 unchanged\n`);
    expect(await vnm(["diff", "-f", file])).toEqual({ status: 0, stdout: "", stderr: "" });
    writeFileSync(file, net(false).replace("10.6.0.10", "10.6.0.11"));
    const d = await vnm(["diff", "-f", file]);
    expect(d.status, d.stderr).toBe(1);
    expect(d.stdout).toBe(
      [
        `bridge/${id} (${file} (document 3)): updated`,
        "-  adminStateUp: true",
        "+  adminStateUp: false",
        `dhcp-host/02:00:00:00:06:01 (${file} (document 1)): updated`,
        '-  ipAddr: "10.6.0.10"',
        '+  ipAddr: "10.6.0.11"',
        "",
      ].join("\n"),
    );
    expect(JSON.parse(await ok(["bridge", "get", id, "-o", "json"])).adminStateUp).toBe(true); // diff sent nothing
    const third = await vnm(["apply", "-f", file]);
    expect(third.stdout).toBe(`bridge/${id} updated\ndhcp-subnet/10.6.0.0_24 unchanged\ndhcp-host/02:00:00:00:06:01 updated\n`);
    // Items as the API shows them apply unchanged: a subnet (its key and bridge from its uri), a whole list.
    const subnet = await bash(`"$VNM" dhcp-subnet get 10.6.0.0/24 --bridge tenant-net -o yaml | "$VNM" apply -f -`);
    expect([subnet.status, subnet.stdout, subnet.stderr]).toEqual([0, "dhcp-subnet/10.6.0.0_24 unchanged\n", ""]);
    const hosts = await bash(`"$VNM" dhcp-hosts --bridge tenant-net --subnet 10.6.0.0/24 -o json | "$VNM" diff -f -`);
    expect([hosts.status, hosts.stdout, hosts.stderr]).toEqual([0, "", ""]);
  });

  it("checks every document before sending any: one naming a missing parent and nothing is created", async () => {
    const bad = "kind: bridge\nname: never-made\ntenantId: files\n---\nkind: dhcp-subnet\nbridgeId: no-such-bridge\nsubnetPrefix: 10.7.0.0\nsubnetLength: 24\n";
    const r = await vnm(["apply", "-f", "-"], bad);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('stdin (document 2): bridgeId: no bridge has the key or name "no-such-bridge", and no document here makes one\nnothing was sent\n');
    expect(r.stdout).toBe("");
    expect((await vnm(["bridge", "get", "never-made"])).status).toBe(1);
    // Below a bridge the file makes, a subnet the file does not make cannot be there.
    const host = "kind: dhcp-host\nbridgeId: never-made\nsubnetAddr: 10.9.0.0/24\nname: h\nmacAddr: 02:00:00:00:09:01\nipAddr: 10.9.0.9\n";
    const below = await vnm(["apply", "-f", "-"], `${bad.split("---")[0]}---\n${host}`);
    expect([below.status, below.stdout]).toEqual([1, ""]);
    expect(below.stderr).toBe('stdin (document 2): subnetAddr: no dhcp-subnet has the key or name "10.9.0.0/24", and no document here makes one\nnothing was sent\n');
    // A parent the file itself makes is no missing parent: it comes first, the subnet below it.
    const good = bad.replace("no-such-bridge", "never-made");
    const d = await vnm(["diff", "-f", "-"], good);
    expect([d.status, d.stderr]).toEqual([1, ""]);
    expect(d.stdout).toBe(
      [
        "bridge (stdin (document 1)): created",
        '+  name: "never-made"',
        '+  tenantId: "files"',
        "dhcp-subnet (stdin (document 2)): created under bridgeId made by stdin (document 1)",
        '+  subnetPrefix: "10.7.0.0"',
        "+  subnetLength: 24",
        "",
      ].join("\n"),
    );
    const both = await vnm(["apply", "-f", "-"], good);
    expect(both.status, both.stderr).toBe(0);
    expect(both.stdout).toMatch(/^bridge\/\S+ created\ndhcp-subnet\/10\.7\.0\.0_24 created\n$/);
  });

  it("checks every document's values with the server before writing any: a bad value in document 2 and nothing is written", async () => {
    await ok(["bridge", "create", "--name", "pre-old", "--tenant-id", "pre"]);
    const names = async () => JSON.parse(await ok(["bridges", "--tenant", "pre", "-o", "json"])).map((b: { name: string }) => b.name).sort();
    const file = [
      "kind: bridge\nname: pre-new\ntenantId: pre",
      "kind: bridge\nname: pre-bad\ntenantId: pre\nadminStateUp: maybe",
      "kind: bridge\nname: pre-old\ntenantId: pre\nadminStateUp: false",
      // A chain by a UUID no chain has: the API's 404 on the field.
      "kind: bridge\nname: pre-filtered\ntenantId: pre\ninboundFilterId: 00000000-0000-4000-8000-000000000000",
    ].join("\n---\n");
    const r = await vnm(["apply", "-f", "-"], file);
    expect([r.status, r.stdout]).toEqual([1, ""]);
    // Every failing document is named, then nothing was written: no create, no update.
    expect(r.stderr).toMatch(/^stdin \(document 2\): error 400: .*\n {2}adminStateUp: .*\n/);
    expect(r.stderr).toMatch(/\nstdin \(document 4\): error 404: .*00000000-0000-4000-8000-000000000000.*\nnothing was written\n$/);
    expect(r.stderr).not.toMatch(/document [13]/);
    expect(await names()).toEqual(["pre-old"]);
    expect(JSON.parse(await ok(["bridge", "get", "pre-old", "--tenant", "pre", "-o", "json"])).adminStateUp).toBe(true);
    // Without the bad ones, all of it goes.
    const good = file.split("\n---\n").filter((_, i) => i % 2 === 0).join("\n---\n");
    const ok2 = await vnm(["apply", "-f", "-"], good);
    expect([ok2.status, ok2.stderr]).toEqual([0, ""]);
    expect(await names()).toEqual(["pre-new", "pre-old"]);
    // Below a bridge the file creates, the server cannot judge a subnet before the bridge is
    // there: its refusal comes when it is written, after the bridge (README, "apply").
    const below = "kind: bridge\nname: pre-parent\ntenantId: pre\n---\nkind: dhcp-subnet\nbridgeId: pre-parent\nsubnetPrefix: 10.8.0.0\nsubnetLength: 99\n";
    const late = await vnm(["apply", "-f", "-"], below);
    expect(late.status).toBe(1);
    expect(late.stdout).toMatch(/^bridge\/\S+ created\n$/);
    expect(late.stderr).toMatch(/^stdin \(document 2\): error 400: .*\n {2}subnetLength: /);
  });

  it("delete -f takes children before parents and exits 0; a second time each is not found (1), unless --ignore-not-found", async () => {
    const id = (await ok(["bridge", "get", "tenant-net", "-o", "jsonpath={.id}"])).trim();
    const del = await vnm(["delete", "-f", file]);
    expect([del.status, del.stderr]).toEqual([0, ""]);
    expect(del.stdout).toBe(`dhcp-host/02:00:00:00:06:01 deleted\ndhcp-subnet/10.6.0.0_24 deleted\nbridge/${id} deleted\n`);
    const again = await vnm(["delete", "-f", file]);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/: error 404: no bridge has the id or name "tenant-net"\n/);
    expect(again.stderr).not.toMatch(NO_STACK);
    const ignored = await vnm(["delete", "-f", file, "--ignore-not-found"]);
    expect([ignored.status, ignored.stderr]).toEqual([0, ""]);
    expect(ignored.stdout).toBe("dhcp-host/web not found\ndhcp-subnet/10.6.0.0_24 not found\nbridge/tenant-net not found\n");
  });
});

describe("jsonpath, sort-by, plurals and short names", () => {
  beforeAll(async () => {
    for (const [name, up] of [
      ["charlie", "true"],
      ["alpha", "false"],
      ["bravo", "true"],
    ]) {
      await ok(["bridge", "create", "--name", name!, "--tenant-id", "sorted", "--admin-state-up", up!, "-o", "name"]);
    }
  });

  it("prints kubectl's jsonpath templates of an item and a list, sorted by a field; vnm bridges and vnm br list", async () => {
    expect(await ok(["bridges", "--tenant", "sorted", "--sort-by", ".name", "-o", "jsonpath={.items[*].name}"])).toBe("alpha bravo charlie\n");
    expect(await ok(["br", "list", "--tenant", "sorted", "--sort-by", "{.name}", "-o", 'jsonpath={range .items[*]}{.name}{"\\t"}{.adminStateUp}{"\\n"}{end}'])).toBe(
      "alpha\tfalse\nbravo\ttrue\ncharlie\ttrue\n\n",
    );
    expect(await ok(["bridges", "list", "--tenant", "sorted", "--sort-by", ".adminStateUp", "-o", "name"])).toMatch(/^bridge\/\S+\n/);
    const byState = await ok(["bridges", "--tenant", "sorted", "--sort-by", ".adminStateUp", "-o", "custom-columns=NAME:.name"]);
    expect(byState.split("\n")[1]).toBe("alpha");
    expect(await ok(["br", "get", "alpha", "-o", "jsonpath={.name} is {.tenantId}"])).toBe("alpha is sorted\n");
    expect(await ok(["bridges", "--tenant", "sorted", "-o", 'jsonpath={.items[?(@.name=="bravo")].adminStateUp}'])).toBe("true\n");
    // The tenant names it: printed as a table prints it, without its escape sequences.
    await ok(["bridge", "create", "--tenant-id", "hostile", "--data", JSON.stringify({ name: "evil\u001b]0;owned\u0007name" }), "-o", "name"]);
    expect(await ok(["bridges", "--tenant", "hostile", "-o", "jsonpath={.items[0].name}"])).toBe("evilname\n");
    // Completion knows them as the kind (bash, the script as an operator sources it).
    const script = join(home, "completion.bash");
    writeFileSync(script, await ok(["completion", "bash"]));
    const completed = await bash(`source ${script}; COMP_WORDS=(vnm br cre); COMP_CWORD=2; COMP_LINE="vnm br cre"; COMP_POINT=10; _vnm; echo "\${COMPREPLY[@]}"`);
    expect(completed.stdout).toBe("create\n");
    const bad = await vnm(["bridges", "-o", "jsonpath={.items[*].name"]);
    expect([bad.status, bad.stderr]).toEqual([2, "jsonpath {.items[*].name: unclosed {\n"]);
  });
});

describe("apply --dry-run and --prune", () => {
  const idOf = async (name: string, tenant: string) => (await ok(["bridge", "get", name, "--tenant", tenant, "-o", "jsonpath={.id}"])).trim();
  const names = async (tenant: string) => JSON.parse(await ok(["bridges", "--tenant", tenant, "-o", "json"])).map((b: { name: string }) => b.name).sort();

  it("--dry-run=server sends each write as a dry run: kubectl's lines, the server's refusals, nothing stored", async () => {
    await ok(["bridge", "create", "--name", "dry-old", "--tenant-id", "dry"]);
    const old = await idOf("dry-old", "dry");
    const file = [
      "kind: bridge\nname: dry-new\ntenantId: dry",
      "kind: dhcp-subnet\nbridgeId: dry-new\nsubnetPrefix: 10.20.0.0\nsubnetLength: 24",
      "kind: bridge\nname: dry-old\ntenantId: dry\nadminStateUp: false",
      "kind: dhcp-subnet\nbridgeId: dry-old\nsubnetPrefix: 10.21.0.0\nsubnetLength: 24",
    ].join("\n---\n");
    const r = await vnm(["apply", "-f", "-", "--dry-run=server"], file);
    expect([r.status, r.stderr]).toEqual([0, ""]);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^bridge\/[0-9a-f-]{36} created \(server dry run\)$/);
    expect(lines.slice(1)).toEqual([
      `bridge/${old} updated (server dry run)`,
      "dhcp-subnet/10.20.0.0_24 created (server dry run: not sent, its bridgeId is made by stdin (document 1))",
      "dhcp-subnet/10.21.0.0_24 created (server dry run)",
      "",
    ]);
    expect(await names("dry")).toEqual(["dry-old"]);
    expect(JSON.parse(await ok(["bridge", "get", old, "-o", "json"])).adminStateUp).toBe(true);
    expect(JSON.parse(await ok(["dhcp-subnets", "--bridge", "dry-old", "-o", "json"]))).toEqual([]);
    // --dry-run=client sends no write; only the server judges a field's value.
    const wrong = "kind: bridge\nname: dry-wrong\ntenantId: dry\nadminStateUp: maybe\n";
    const client = await vnm(["apply", "-f", "-", "--dry-run=client"], wrong);
    expect([client.status, client.stdout, client.stderr]).toEqual([0, "bridge/dry-wrong created (dry run)\n", ""]);
    const server = await vnm(["apply", "-f", "-", "--dry-run=server"], wrong);
    expect([server.status, server.stdout]).toEqual([1, ""]);
    expect(server.stderr).toMatch(/^stdin: error 400: .*\n {2}adminStateUp: /);
    expect(await names("dry")).toEqual(["dry-old"]);
    const bad = await vnm(["apply", "-f", "-", "--dry-run=sometimes"], wrong);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("sometimes");
  });

  it("--prune deletes what the file does not name, only in its tenants and under its parents, and needs --all or --prune-prefix", async () => {
    for (const [name, tenant] of [
      ["lab-a", "prune"],
      ["lab-b", "prune"],
      ["keep-c", "prune"],
      ["lab-x", "prune-other"],
    ]) {
      await ok(["bridge", "create", "--name", name!, "--tenant-id", tenant!]);
    }
    for (const [bridge, prefix] of [
      ["lab-a", "10.30.0.0"],
      ["lab-a", "10.31.0.0"],
      ["lab-x", "10.32.0.0"],
    ]) {
      await ok(["dhcp-subnet", "create", "--bridge", bridge!, "--subnet-prefix", prefix!, "--subnet-length", "24"]);
    }
    const b = await idOf("lab-b", "prune");
    const c = await idOf("keep-c", "prune");
    const file = "kind: bridge\nname: lab-a\ntenantId: prune\n---\nkind: dhcp-subnet\nbridgeId: lab-a\nsubnetPrefix: 10.30.0.0\nsubnetLength: 24\n";
    const a = await idOf("lab-a", "prune");
    // kubectl's prune needs -l or --all: here --all or --prune-prefix.
    const bare = await vnm(["apply", "-f", "-", "--prune"], file);
    expect([bare.status, bare.stdout]).toEqual([2, ""]);
    expect(bare.stderr).toContain("--prune needs --all");
    // A top-level document without its tenant gives prune no scope: nothing is sent.
    const noTenant = await vnm(["apply", "-f", "-", "--prune", "--all"], "kind: bridge\nname: lab-z\n");
    expect([noTenant.status, noTenant.stdout]).toEqual([2, ""]);
    expect(noTenant.stderr).toBe("stdin: --prune needs tenantId: on every bridge (only items of the tenants the file names are pruned)\nnothing was sent\n");
    // A dry run says what would go and deletes nothing.
    const dry = await vnm(["apply", "-f", "-", "--prune", "--prune-prefix", "lab-", "--dry-run=server"], file);
    expect([dry.status, dry.stderr]).toEqual([0, ""]);
    expect(dry.stdout).toBe(`bridge/${a} unchanged (server dry run)\ndhcp-subnet/10.30.0.0_24 unchanged (server dry run)\nbridge/${b} pruned (server dry run)\n`);
    expect(await names("prune")).toEqual(["keep-c", "lab-a", "lab-b"]);
    // By prefix: lab-b goes; keep-c stays, and so does lab-x (another tenant) with its subnet.
    const byPrefix = await vnm(["apply", "-f", "-", "--prune", "--prune-prefix", "lab-"], file);
    expect([byPrefix.status, byPrefix.stderr]).toEqual([0, ""]);
    expect(byPrefix.stdout).toBe(`bridge/${a} unchanged\ndhcp-subnet/10.30.0.0_24 unchanged\nbridge/${b} pruned\n`);
    expect(await names("prune")).toEqual(["keep-c", "lab-a"]);
    // --all: every other bridge of the tenant, and every other subnet of lab-a (children first).
    const all = await vnm(["apply", "-f", "-", "--prune", "--all"], file);
    expect([all.status, all.stderr]).toEqual([0, ""]);
    expect(all.stdout).toBe(`bridge/${a} unchanged\ndhcp-subnet/10.30.0.0_24 unchanged\ndhcp-subnet/10.31.0.0_24 pruned\nbridge/${c} pruned\n`);
    expect(await names("prune")).toEqual(["lab-a"]);
    expect(JSON.parse(await ok(["dhcp-subnets", "--bridge", "lab-a", "-o", "json"])).map((s: { subnetPrefix: string }) => s.subnetPrefix)).toEqual(["10.30.0.0"]);
    expect(await names("prune-other")).toEqual(["lab-x"]);
    expect(JSON.parse(await ok(["dhcp-subnets", "--bridge", "lab-x", "-o", "json"]))).toHaveLength(1);
  });
});

describe("user create", () => {
  const login = (user: string, password: string) => vnm(["login", "--user", user, "--context", `as-${user}`], "", { VNM_PASSWORD: password });

  it("reads the password from standard input when it is not a terminal", async () => {
    const pw = "violin cactus zebra 7";
    const r = await vnm(["user", "create", "--name", "piped-user", "--tenant-id", "T", "--roles", "tenant_user", "-o", "name"], `${pw}\n`);
    expect(r.status, r.stderr).toBe(0);
    expect((await login("piped-user", pw)).status).toBe(0);
    const none = await vnm(["user", "create", "--name", "nobody", "--tenant-id", "T", "--roles", "tenant_user"]);
    expect([none.status, none.stderr]).toEqual([2, "no password of the new user: give --password, type it at the prompt on a terminal, or pipe it on standard input\n"]);
  });

  it("asks for it at a prompt without echo on a terminal", async () => {
    const pw = "trumpet meadow quartz 9";
    const child = spawn("script", ["-qec", `${BIN} user create --name prompted-user --tenant-id T --roles tenant_user -o name`, "/dev/null"], { cwd: tmpdir(), env: env() });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const done = new Promise<number | null>((r) => child.on("close", r));
    await waitFor("the prompt", async () => out.includes("Password of the new user:"), 10_000);
    child.stdin.write(`${pw}\r`);
    expect(await done).toBe(0);
    expect(out).toMatch(/user\/\S+/);
    expect(out).not.toContain(pw);
    expect((await login("prompted-user", pw)).status).toBe(0);
  });
});
