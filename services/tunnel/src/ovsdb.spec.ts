// The OVSDB client's framing and values, without a network.
import { describe, expect, it } from "vitest";
import { backoff } from "./device.ts";
import { JsonStream, setMembers, uuidOf } from "./ovsdb.ts";

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
  });
});

describe("OVSDB values", () => {
  it("reads sets, bare atoms and uuids", () => {
    expect(setMembers(["set", ["a", "b"]])).toEqual(["a", "b"]);
    expect(setMembers("a")).toEqual(["a"]);
    expect(setMembers(["set", []])).toEqual([]);
    expect(uuidOf(["uuid", "u-1"])).toBe("u-1");
    expect(uuidOf("u-1")).toBeUndefined();
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
    }
    expect(new Set(Array.from({ length: 50 }, () => backoff(5))).size).toBeGreaterThan(1);
  });
});
