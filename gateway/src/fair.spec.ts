// The seats of a service (fair.ts) by themselves: a tenant alone may take twice the seats, the
// next seat goes to the waiting tenant with the fewest in use, a tenant's queue and wait are bounded (429 with Retry-After), and a call
// whose client left stops waiting.
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import type { ApiResponse } from "./context.ts";
import { SeatPool } from "./fair.ts";
import type { EdgeError } from "./http-error.ts";

const answer = () => new EventEmitter() as unknown as ApiResponse;

describe("a service's seats", () => {
  it("let a tenant alone take twice the seats, and give a freed seat to the waiting tenant with the fewest in use", async () => {
    const pool = new SeatPool("bridge", { seats: 2, queue: 10, waitMs: 10_000 });
    for (let i = 0; i < 4; i++) expect(pool.take("A", answer())).toBeUndefined();
    const order: string[] = [];
    const a = [1, 2, 3].map((i) => pool.take("A", answer())!.then(() => order.push(`A${i}`)));
    const b = pool.take("B", answer())!.then(() => order.push("B1"));
    expect(pool.state("A")).toEqual({ inUse: 4, waiting: 3 });
    // Another tenant asks: the seats are 2 again; B (none in use) is seated once A holds fewer,
    // before A's three that waited longer.
    pool.give("A", 5);
    pool.give("A", 5);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    pool.give("A", 5);
    await b;
    expect(order).toEqual(["B1"]);
    expect(pool.state("A")).toEqual({ inUse: 1, waiting: 3 });
    // B done: A is seated as the seats go, 2 at most until it has been alone a second, then 4.
    pool.give("B", 5);
    await a[0];
    expect(pool.state("A")).toEqual({ inUse: 2, waiting: 2 });
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    pool.give("A", 5);
    await Promise.all(a);
    expect(order).toEqual(["B1", "A1", "A2", "A3"]);
    expect(pool.state("A")).toEqual({ inUse: 3, waiting: 0 });
  });

  it("refuse a call past its tenant's queue at once, and one that waits past the bound, with 429 and Retry-After", async () => {
    const pool = new SeatPool("bridge", { seats: 1, queue: 1, waitMs: 50 });
    pool.take("A", answer());
    pool.take("A", answer());
    const waiting = pool.take("A", answer())!;
    let full: EdgeError | undefined;
    try {
      pool.take("A", answer());
    } catch (err) {
      full = err as EdgeError;
    }
    expect(full?.status).toBe(429);
    expect(Number(full?.headers["Retry-After"])).toBeGreaterThanOrEqual(1);
    // Said before the request costs more (a write's body): for A, not for B.
    expect(() => pool.refuseIfFull("A")).toThrow(/fill their share/);
    expect(() => pool.refuseIfFull("B")).not.toThrow();
    // Another tenant has a queue of its own.
    const other = pool.take("B", answer())!;
    const late = await waiting.then(
      () => undefined,
      (err: EdgeError) => err,
    );
    expect(late?.status).toBe(429);
    expect(late?.headers["Retry-After"]).toBe("1");
    await expect(other).rejects.toMatchObject({ status: 429 });
    pool.give("A", 1);
    pool.give("A", 1);
    expect(pool.state("A")).toEqual({ inUse: 0, waiting: 0 });
    // The seats are free again: taken at once.
    expect(pool.take("B", answer())).toBeUndefined();
  });

  it("stop a call waiting when its client leaves, and never seat it", async () => {
    const pool = new SeatPool("bridge", { seats: 1, queue: 5, waitMs: 10_000 });
    pool.take("A", answer());
    pool.take("A", answer());
    const res = answer();
    const left = pool.take("B", res)!;
    (res as unknown as EventEmitter).emit("close");
    await expect(left).rejects.toMatchObject({ status: 499 });
    expect(pool.state("B")).toEqual({ inUse: 0, waiting: 0 });
    pool.give("A", 1);
    pool.give("A", 1);
    expect(pool.take("C", answer())).toBeUndefined();
  });
});
