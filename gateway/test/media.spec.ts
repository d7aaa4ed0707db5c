import { describe, expect, it } from "vitest";
import { acceptsGzip, essence, negotiate } from "../src/media.ts";

const B = "application/vnd.org.service.Bridge-v4+json";
const J = "application/json";

describe("negotiate", () => {
  it.each([
    [undefined, B],
    ["", B],
    ["*/*", B],
    ["application/*", B],
    [J, J],
    [B.toLowerCase(), B],
    [`${J}, ${B}`, B],
    [`${B};q=0.5, ${J}`, J],
    [`text/html, */*;q=0.1`, B],
    ["text/html", undefined],
    ["application/vnd.org.service.Bridge-v3+json", undefined],
    [`${B};q=0`, undefined],
    [`*/*;q=0.5, ${J};q=0`, B],
    ["garbage", undefined],
  ])("Accept %j -> %j", (accept, expected) => {
    expect(negotiate(accept, [B, J])).toBe(expected);
  });
});

describe("essence", () => {
  it("drops parameters and case", () => {
    expect(essence(`${B}; charset=UTF-8`)).toBe(B.toLowerCase());
    expect(essence(undefined)).toBeUndefined();
    expect(essence("  ")).toBeUndefined();
  });
});

describe("acceptsGzip", () => {
  it.each([
    [undefined, false],
    ["", false],
    ["identity", false],
    ["gzip", true],
    ["GZIP", true],
    ["x-gzip", true],
    ["deflate, gzip;q=0.5", true],
    ["gzip;q=0", false],
    ["gzip; q=0.000", false],
    ["*", true],
    ["*;q=0", false],
    ["gzip;q=0, *", false],
    ["br, *;q=0.1", true],
    ["gzipped", false],
  ])("Accept-Encoding %j -> %s", (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });
});
