import { constants as h2, createServer, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { Metadata, status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { ApiError, ORIGIN_KEY } from "./errors.ts";
import { loadGrpc } from "./proto.ts";
import { addressVariable, createUpstream, grpcTarget } from "./upstream.ts";

describe("service addresses", () => {
  it("come from VNM_<DOMAIN>_ADDR, one or several replicas", () => {
    expect(addressVariable("lb")).toBe("VNM_LB_ADDR");
    expect(grpcTarget("svc:50051")).toBe("dns:svc:50051");
    expect(grpcTarget("10.0.0.1:1,10.0.0.2:1")).toBe("ipv4:10.0.0.1:1,10.0.0.2:1");
    expect(() => grpcTarget("a:1,b:2")).toThrow(/ipv4/);
  });

  it("a service without an address answers UNAVAILABLE naming its variable, without a connection", async () => {
    const up = createUpstream(loadGrpc(), [{ name: "vnm.lb.v1.PoolService", domain: "lb" }], () => undefined);
    const err = await up.call("vnm.lb.v1.PoolService", "ListPools", {}, 1000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(status.UNAVAILABLE);
    expect((err as ApiError).message).toMatch(/lb service.*VNM_LB_ADDR/);
    expect(await up.health("lb", 100)).toBe(false);
    up.close();
  });
});

describe("errors across gRPC", () => {
  it("keep code, message and violations, and say they are the service's own", () => {
    const sent = ApiError.invalid([{ property: "name", message: "must be a string" }]).toServiceError();
    expect(sent.metadata!.get(ORIGIN_KEY)).toEqual(["service"]);
    const back = ApiError.from({ ...sent, message: "x", name: "Error" });
    expect(back).toMatchObject({ code: status.INVALID_ARGUMENT, message: "Validation error(s) found" });
    expect(back.violations).toEqual([{ property: "name", message: "must be a string" }]);
  });

  it("from a channel that failed name the service called; the service's own answer passes as it is", () => {
    const channel = Object.assign(new Error("14 UNAVAILABLE: No connection established"), { code: status.UNAVAILABLE, details: "No connection established", metadata: new Metadata() });
    expect(ApiError.from(channel, "lb")).toMatchObject({ code: status.UNAVAILABLE, message: "The lb service is unavailable; try again later" });
    const slow = Object.assign(new Error("4 DEADLINE_EXCEEDED"), { code: status.DEADLINE_EXCEEDED, details: "Deadline exceeded", metadata: new Metadata() });
    expect(ApiError.from(slow, "lb").message).toBe("The lb service did not answer in time");
    const own = ApiError.unavailable("The database is unavailable; try again later").toServiceError();
    expect(ApiError.from({ ...own, message: "x", name: "Error" }, "lb").message).toBe("The database is unavailable; try again later");
  });

  it("from the database: out of reach or out of connections is UNAVAILABLE, a conflict between transactions ABORTED, anything else INTERNAL", () => {
    expect(ApiError.from(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })).code).toBe(status.UNAVAILABLE);
    expect(ApiError.from(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" })).code).toBe(status.UNAVAILABLE);
    // Its connection slots all taken (max_connections): a dependency that cannot serve now, not a bug.
    expect(ApiError.from(Object.assign(new Error("sorry, too many clients already"), { code: "53300" })).code).toBe(status.UNAVAILABLE);
    expect(ApiError.from(Object.assign(new Error("deadlock detected"), { code: "40P01" })).code).toBe(status.ABORTED);
    const bug = ApiError.from(new TypeError("x is undefined"));
    expect(bug).toMatchObject({ code: status.INTERNAL, message: "An internal error occurred" });
    expect(bug.cause).toBeInstanceOf(TypeError);
  });
});

/**
 * A gRPC server by hand that refuses the first `refusals` streams it is sent (RST_STREAM
 * REFUSED_STREAM, as a stopping server does with a stream that raced its GOAWAY), then answers
 * every call with an empty message and OK; `streams` counts what it was sent.
 */
async function refusingServer(refusals: number): Promise<{ server: Http2Server; address: string; streams: () => number }> {
  let streams = 0;
  const server = createServer();
  server.on("stream", (stream) => {
    // Closing a stream with an error code reports that code on the stream itself too.
    stream.on("error", () => {});
    if (++streams <= refusals) return void stream.close(h2.NGHTTP2_REFUSED_STREAM);
    stream.on("data", () => {});
    stream.on("end", () => {
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(Buffer.alloc(5)); // one message, empty: not compressed, length 0
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, address: `127.0.0.1:${(server.address() as AddressInfo).port}`, streams: () => streams };
}

describe("calls that never reached the service", () => {
  it("a write whose stream is refused twice (grpc-js retries a refusal once) is made again and succeeds: it never reached the service", async () => {
    const fake = await refusingServer(2);
    const up = createUpstream(loadGrpc(), [{ name: "vnm.lb.v1.PoolService", domain: "lb" }], () => fake.address);
    try {
      const r = await up.call("vnm.lb.v1.PoolService", "CreatePool", { pool: { loadBalancerId: "x" } }, 2000);
      expect(r.response).toBeDefined();
      expect(fake.streams()).toBe(3);
    } finally {
      up.close();
      fake.server.close();
    }
  });

  it("a write refused on every attempt fails UNAVAILABLE after three, well within its deadline", async () => {
    const fake = await refusingServer(100);
    const up = createUpstream(loadGrpc(), [{ name: "vnm.lb.v1.PoolService", domain: "lb" }], () => fake.address);
    try {
      const t0 = Date.now();
      const err = await up.call("vnm.lb.v1.PoolService", "CreatePool", { pool: { loadBalancerId: "x" } }, 5000).catch((e: unknown) => e);
      expect((err as ApiError).code).toBe(status.UNAVAILABLE);
      expect(Date.now() - t0).toBeLessThan(2000);
      // Each of our three attempts is grpc-js's own two (the refusal retried once).
      expect(fake.streams()).toBe(6);
    } finally {
      up.close();
      fake.server.close();
    }
  });
});

describe("a part's gRPC package", () => {
  it("loads a proto package when one of its services is first asked for, and no other", () => {
    const pkg = loadGrpc();
    expect(pkg.packages).toEqual([]);
    const bridges = pkg.service("vnm.bridge.v1.BridgeService");
    expect(Object.keys(bridges.service)).toContain("CreateBridge");
    expect(pkg.service("vnm.bridge.v1.DhcpService")).toBeDefined();
    expect(pkg.packages).toEqual(["vnm.bridge.v1"]);
    expect(() => pkg.service("vnm.bridge.v1.NoSuchService")).toThrow(/no gRPC service vnm.bridge.v1.NoSuchService/);
  });

  it("an upstream makes a domain's clients, and loads its package, when that domain is first called", async () => {
    const fake = await refusingServer(0);
    const pkg = loadGrpc();
    const up = createUpstream(
      pkg,
      [
        { name: "vnm.lb.v1.PoolService", domain: "lb" },
        { name: "vnm.qos.v1.QosPolicyService", domain: "qos" },
      ],
      () => fake.address,
    );
    try {
      expect(pkg.packages).toEqual([]);
      await up.call("vnm.lb.v1.PoolService", "CreatePool", { pool: { loadBalancerId: "x" } }, 2000);
      expect(pkg.packages).toEqual(["vnm.lb.v1", "grpc.health.v1"]);
      expect(fake.streams()).toBe(1);
    } finally {
      up.close();
      fake.server.close();
    }
  });
});
