// A list's cache key is made per caller from a tail worked out once per request target: it must
// be the very key `cacheKey` gives (gateways of two versions share Redis during an upgrade), and
// no caller's scope may run into the tail to meet another's key.
import { expect, it } from "vitest";
import { cacheKey, cacheKeyTail, cacheKeyWith } from "../src/cache.ts";

const scopes = ["*", "t:tenant-one", 't:a",["x', "t:\u00e9\u4e2d\ud83d\ude00", "t:null", 't:\\"]'];
const rests: unknown[][] = [
  ["/bridges", [], []],
  ["/bridges/{bridgeId}/ports", [["bridgeId", "3f2a3c3e-8a57-4d0e-9a43-6c1f7b0e2d11"]], [["name", 'a","b']]],
  ["/bridges", [], [["adminStateUp", false], ["name", "]],[\u2028"]]],
];

it("a key made from its tail is the key cacheKey makes, for any scope and parameters", () => {
  for (const who of scopes) for (const rest of rests) expect(cacheKeyWith(who, cacheKeyTail(...rest))).toBe(cacheKey(who, ...rest));
});

it("two callers' scopes never give one key for the same or another target", () => {
  const keys = new Set<string>();
  for (const who of scopes) for (const rest of rests) keys.add(cacheKeyWith(who, cacheKeyTail(...rest)));
  expect(keys.size).toBe(scopes.length * rests.length);
});
