import { describe, expect, it } from "vitest";
import { redisTarget, redisUrl } from "./limits.ts";

describe("REDIS_URL", () => {
  it("names one server, or the Sentinels and the primary's name", () => {
    expect(redisTarget("redis://10.0.0.1:6379/2")).toEqual({ url: "redis://10.0.0.1:6379/2" });
    expect(redisTarget("redis-sentinel://10.0.0.1:26379,10.0.0.2:26380,sentinel-c/vnm")).toEqual({
      sentinels: [
        { host: "10.0.0.1", port: 26379 },
        { host: "10.0.0.2", port: 26380 },
        { host: "sentinel-c", port: 26379 },
      ],
      name: "vnm",
      username: undefined,
      password: undefined,
    });
    expect(redisTarget("redis-sentinel://:p%40ss@h:26379/main")).toMatchObject({ password: "p@ss", name: "main" });
  });

  it("is refused at start when a Sentinel form names no primary or a bad port", () => {
    expect(() => redisUrl("redis-sentinel://h:26379")).toThrow(/primary name/);
    expect(() => redisUrl("redis-sentinel://h:99999/vnm")).toThrow(/not a Sentinel address/);
    expect(redisUrl("")).toBeUndefined();
  });
});
