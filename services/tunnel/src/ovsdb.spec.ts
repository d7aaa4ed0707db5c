// The OVSDB client's framing, its bounds and values, without a network.
import { describe, expect, it } from "vitest";
import { backoff, DeviceTables } from "./device.ts";
import { JsonStream, PeerError } from "./ovsdb.ts";

const faultOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (err) {
    return err instanceof PeerError ? err.reason : `not a PeerError: ${(err as Error).message}`;
  }
  return undefined;
};

describe("JsonStream", () => {
  it("splits concatenated values, whatever the chunking, strings with braces and escapes included", () => {
    const text = '{"id":1,"result":["hardware_vtep"]} {"method":"echo","params":["}{\\"x"],"id":"e"}\n[1,[2]]';
    for (const size of [1, 2, 3, 7, text.length]) {
      const s = new JsonStream();
      const out: unknown[] = [];
      for (let i = 0; i < text.length; i += size) out.push(...s.push(text.slice(i, i + size)));
      expect(out).toEqual([{ id: 1, result: ["hardware_vtep"] }, { method: "echo", params: ['}{"x'], id: "e" }, [1, [2]]]);
    }
  });

  it("refuses bytes that are not a JSON object or array (something that is not OVSDB)", () => {
    expect(() => new JsonStream().push("SSH-2.0-OpenSSH_9.2\r\n")).toThrow(/not a JSON object or array/);
    expect(() => new JsonStream().push("]")).toThrow(/unbalanced/);
    expect(() => new JsonStream().push("HTTP/1.1 400 Bad Request")).toThrow();
    expect(faultOf(() => new JsonStream().push('{"a":tru}'))).toBe("not_json");
  });

  it("takes nesting up to 1,000 deep, as Open vSwitch's parser does, and refuses deeper before parsing", () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    expect(new JsonStream().push(deep(1_000))).toHaveLength(1);
    expect(faultOf(() => new JsonStream().push(deep(1_001)))).toBe("too_deep");
    // Split over chunks, and far deeper: refused as soon as the bound is passed.
    const s = new JsonStream();
    expect(faultOf(() => s.push("[".repeat(600)) && s.push("[".repeat(100_000)))).toBe("too_deep");
  });

  it("refuses a message with too many values or too many characters, complete or not", () => {
    const limits = { maxChars: 1_000, maxDepth: 10, maxValues: 50 };
    expect(new JsonStream(limits).push(`[${"{},".repeat(48)}{}]`)).toHaveLength(1);
    expect(faultOf(() => new JsonStream(limits).push(`[${"{},".repeat(49)}{}]`))).toBe("too_many_values");
    expect(faultOf(() => new JsonStream(limits).push(`["${"x".repeat(1_000)}"]`))).toBe("too_large");
    const partial = new JsonStream(limits);
    expect(faultOf(() => partial.push(`["${"x".repeat(600)}`) && partial.push("x".repeat(600)))).toBe("too_large");
    // The count is per message: many small messages are fine.
    expect(new JsonStream(limits).push("[{}]".repeat(200))).toHaveLength(200);
  });
});

describe("a device's tables", () => {
  const sw = (row: Record<string, unknown>) => ({ Physical_Switch: { s1: { new: { management_ips: "127.0.0.1", ...row } } } });

  it("keep the served columns of the served tables only", () => {
    const t = new DeviceTables();
    t.apply({
      ...sw({ name: "a", description: "d", tunnel_ips: ["set", ["10.0.0.2", "10.0.0.1"]], ports: ["set", [["uuid", "p1"]]], other_config: ["map", [["k", "v"]]] }),
      Physical_Port: { p1: { new: { name: "eth0", description: "", vlan_bindings: ["map", []] } } },
      Logical_Switch: { l1: { new: { name: "ls" } } },
    });
    expect(t.stateOf("127.0.0.1")).toEqual({ connectionState: "connected", name: "a", description: "d", tunnelIps: ["10.0.0.1", "10.0.0.2"], connectionError: null, ports: new Map([["eth0", ""]]) });
    // No switch names another address: an error that says why.
    expect(t.stateOf("10.0.0.7")).toMatchObject({ connectionState: "error", connectionError: "the device has no Physical_Switch whose management_ips hold 10.0.0.7" });
    expect([...t.switches.values()][0]).not.toHaveProperty("other_config");
    expect([...t.ports.values()][0]).not.toHaveProperty("vlan_bindings");
  });

  it("count the bytes kept as rows come, change and go, and refuse a state over the device's budget", () => {
    const t = new DeviceTables(100);
    t.apply({ ...sw({ name: "ab", description: "cd" }), Physical_Port: { p1: { new: { name: "eth0", description: "é".repeat(10) } } } });
    expect(t.bytes).toBe(2 + 2 + "127.0.0.1".length + 4 + 20);
    t.apply({ Physical_Port: { p1: { new: { name: "eth0", description: "" } }, p2: { new: { name: "eth1", description: "x".repeat(40) } } } });
    expect(t.bytes).toBe(2 + 2 + 9 + 4 + 4 + 40);
    t.apply({ Physical_Port: { p2: { old: {} } } });
    expect(t.bytes).toBe(2 + 2 + 9 + 4);
    expect(faultOf(() => t.apply({ Physical_Port: { p3: { new: { name: "eth2", description: "x".repeat(80) } } } }))).toBe("over_budget");
  });

  it("take a set's bare member as a set of one, and say where a value is wrong", () => {
    const t = new DeviceTables();
    t.apply({ ...sw({ tunnel_ips: "10.0.0.9", ports: ["uuid", "p1"] }), Physical_Port: { p1: { new: { name: "eth0" } } } });
    expect(t.stateOf("127.0.0.1")).toMatchObject({ tunnelIps: ["10.0.0.9"], ports: new Map([["eth0", ""]]) });
    expect(() => new DeviceTables().apply(sw({ tunnel_ips: ["set", ["10.0.0.1", 7]] }))).toThrow("Physical_Switch row s1: tunnel_ips.1 must be a string");
    expect(() => new DeviceTables().apply(sw({ ports: ["set", [["uuid", 7]]] }))).toThrow(/^Physical_Switch row s1: ports\.0 must be a uuid atom/);
  });

  it("refuse values of the wrong type or size, and too many rows", () => {
    expect(faultOf(() => new DeviceTables().apply(sw({ name: [["nested"]] })))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply(sw({ name: "x".repeat(1_025) })))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply(sw({ ports: ["set", [["uuid", 7]]] })))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply("not updates"))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply(sw({ description: null })))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply(sw({ tunnel_ips: ["set", "10.0.0.1"] })))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply(sw({ tunnel_ips: ["set", ["10.0.0.1"], "extra"] })))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply(sw({ tunnel_ips: ["set", Array.from({ length: 65 }, (_, i) => `10.0.0.${i}`)] })))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply(sw({ ports: ["uuid", "p".repeat(65)] })))).toBe("bad_message");
    expect(faultOf(() => new DeviceTables().apply({ Physical_Port: { p1: { new: ["name", "eth0"] } } }))).toBe("bad_message");
    const many = Object.fromEntries(Array.from({ length: 16_385 }, (_, i) => [`p${i}`, { new: { name: `eth${i}` } }]));
    expect(faultOf(() => new DeviceTables().apply({ Physical_Port: many }))).toBe("too_many_rows");
  });
});

describe("reconnect back-off", () => {
  it("doubles from 250 ms, is capped at 5 s, and is jittered within the upper half of each step", () => {
    for (let i = 0; i < 200; i++) {
      expect(backoff(0)).toBeGreaterThanOrEqual(125);
      expect(backoff(0)).toBeLessThanOrEqual(250);
      expect(backoff(3)).toBeGreaterThanOrEqual(1000);
      expect(backoff(3)).toBeLessThanOrEqual(2000);
      expect(backoff(30)).toBeLessThanOrEqual(5000);
      expect(backoff(30)).toBeGreaterThanOrEqual(2500);
      expect(backoff(5_000)).toBeLessThanOrEqual(5000);
    }
    expect(new Set(Array.from({ length: 50 }, () => backoff(5))).size).toBeGreaterThan(1);
  });
});
