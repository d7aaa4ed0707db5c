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

  it("from the database: out of reach is UNAVAILABLE, a conflict between transactions ABORTED, anything else INTERNAL", () => {
    expect(ApiError.from(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })).code).toBe(status.UNAVAILABLE);
    expect(ApiError.from(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" })).code).toBe(status.UNAVAILABLE);
    expect(ApiError.from(Object.assign(new Error("deadlock detected"), { code: "40P01" })).code).toBe(status.ABORTED);
    const bug = ApiError.from(new TypeError("x is undefined"));
    expect(bug).toMatchObject({ code: status.INTERNAL, message: "An internal error occurred" });
    expect(bug.cause).toBeInstanceOf(TypeError);
  });
});
