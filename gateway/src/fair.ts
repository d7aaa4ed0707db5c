// Fair shares of the services (issue 54): a call that reaches a service (a write, a cache miss)
// takes one of a bounded number of seats that service has at this gateway, shared among the
// tenants asking by fair queuing: while seats are free a call takes one at once; when all are
// taken it waits in its tenant's queue, and each seat given back goes to the waiting tenant with
// the fewest seats in use (the one waiting longest among equals); a tenant alone at a service may
// hold twice its seats (ALONE), none of them then anyone else's. A tenant's queue is bounded,
// and so is a call's wait: beyond either, 429 with Retry-After, never a timeout. Kubernetes' API
// Priority and Fairness, cut to what one gateway process needs: a service is a priority level
// (its seats its concurrency limit), a tenant a flow with a queue of its own (no shuffle
// sharding: the queues are per tenant, created as tenants ask). Cache hits take no seat: they
// are answered before any of this (dispatch.ts' answeredNow and fromCache).
import type { ApiResponse } from "./context.ts";
import { EdgeError } from "./http-error.ts";

export interface SeatOptions {
  /** Calls of each service under way at once at this gateway (0: no seats, calls go at once). */
  seats: number;
  /** Calls of one tenant waiting for a seat of one service; beyond, 429. */
  queue: number;
  /** The longest a call waits for its seat; then 429. */
  waitMs: number;
}

/** A call waiting for a seat. */
interface Waiter {
  flow: Flow;
  seated: () => void;
  refused: (err: EdgeError) => void;
  timer: NodeJS.Timeout;
  res: ApiResponse;
  gone: () => void;
  /** When it started waiting (performance.now()): the oldest head goes first among equals. */
  since: number;
}

/** One tenant's calls of one service: seats held and calls waiting, in order. */
interface Flow {
  key: string;
  inUse: number;
  waiting: Waiter[];
}

/**
 * How many times the seats one tenant may hold while no other tenant asks: a seat given back is
 * idle for the hop to the gateway and back, so a lone flood keeps the service busier with a few
 * calls waiting in its pool; none of them is another tenant's then.
 */
const ALONE = 2;
/**
 * How long after another tenant's last call a tenant counts as alone: a light tenant between two
 * of its calls has none under way for a moment, and the seats must not flap to twice as many.
 */
const ALONE_AFTER_MS = 1_000;

/** How much a new hold time counts in the running mean of the seats' hold times. */
const HOLD_WEIGHT = 0.1;

/** The seats of one service at this gateway. */
export class SeatPool {
  /** Seats taken, every tenant's. */
  private inUse = 0;
  /** When more than one tenant last had calls here (performance.now()). */
  private sharedAt = Number.NEGATIVE_INFINITY;
  private readonly flows = new Map<string, Flow>();
  /** Flows with a call waiting. */
  private readonly queued = new Set<Flow>();
  /** Running mean of how long a seat is held (ms): what Retry-After is estimated from. */
  private holdMs = 10;
  readonly name: string;
  private readonly opts: SeatOptions;

  constructor(name: string, opts: SeatOptions) {
    this.name = name;
    this.opts = opts;
  }

  /** The seats that may be taken now: ALONE times the seats while one tenant alone has had calls here for a while. */
  private limit(): number {
    if (this.flows.size > 1) {
      this.sharedAt = performance.now();
      return this.opts.seats;
    }
    return performance.now() - this.sharedAt < ALONE_AFTER_MS ? this.opts.seats : this.opts.seats * ALONE;
  }

  /**
   * A seat for a call of `tenant`: undefined when it has one at once (no await), else a promise
   * that resolves when it is seated. Throws, or rejects with, the 429 of a full queue or a wait
   * past its bound; a call whose client has gone while waiting is refused too (nobody reads it).
   */
  take(tenant: string, res: ApiResponse): Promise<void> | undefined {
    const flow = this.flowOf(tenant);
    // A seat is free only while nobody waits: a seat given back goes to a waiting call at once.
    if (this.queued.size === 0 && this.inUse < this.limit()) {
      this.inUse++;
      flow.inUse++;
      return undefined;
    }
    if (flow.waiting.length >= this.opts.queue) {
      this.forget(flow);
      throw this.full(flow);
    }
    return new Promise<void>((seated, refused) => {
      const w: Waiter = {
        flow,
        seated,
        refused,
        res,
        since: performance.now(),
        timer: setTimeout(() => this.drop(w, EdgeError.tooManyRequests(`This tenant's call waited ${this.opts.waitMs} ms for its share of the ${this.name} service at this gateway; retry later`, this.retryAfter(flow))), this.opts.waitMs),
        gone: () => this.drop(w, EdgeError.client(499, "The client closed the request while it waited for its share")),
      };
      flow.waiting.push(w);
      this.queued.add(flow);
      res.once("close", w.gone);
    });
  }

  /** Gives back `tenant`'s seat, held `heldMs`: to the waiting tenant with the fewest in use, else free. */
  give(tenant: string, heldMs: number): void {
    this.holdMs += HOLD_WEIGHT * (heldMs - this.holdMs);
    this.inUse--;
    const flow = this.flows.get(tenant);
    if (flow) {
      flow.inUse--;
      this.forget(flow);
    }
    this.seatWaiting();
  }

  /** Seats waiting calls while seats may be taken (one given back, or a tenant gone: the limit rose). */
  private seatWaiting(): void {
    while (this.inUse < this.limit()) {
      const next = this.nextFlow();
      if (!next) return;
      const w = next.waiting.shift()!;
      if (next.waiting.length === 0) this.queued.delete(next);
      next.inUse++;
      this.inUse++;
      clearTimeout(w.timer);
      w.res.off("close", w.gone);
      w.seated();
    }
  }

  /**
   * Throws the 429 `take` would give `tenant` now, before the request costs more work (a write's
   * body read and checked): every seat taken and the tenant's queue full.
   */
  refuseIfFull(tenant: string): void {
    const flow = this.flows.get(tenant);
    if (flow && flow.waiting.length >= this.opts.queue && this.inUse >= this.limit()) throw this.full(flow);
  }

  private full(flow: Flow): EdgeError {
    return EdgeError.tooManyRequests(`This tenant's calls of the ${this.name} service fill their share: ${flow.inUse} under way and ${flow.waiting.length} waiting at this gateway; retry later`, this.retryAfter(flow));
  }

  /** Calls of `tenant` seated and waiting (for tests). */
  state(tenant: string): { inUse: number; waiting: number } {
    const f = this.flows.get(tenant);
    return { inUse: f?.inUse ?? 0, waiting: f?.waiting.length ?? 0 };
  }

  /** The waiting flow with the fewest seats in use; among equals, the one whose first call waited longest. */
  private nextFlow(): Flow | undefined {
    let best: Flow | undefined;
    for (const f of this.queued) {
      if (!best || f.inUse < best.inUse || (f.inUse === best.inUse && f.waiting[0]!.since < best.waiting[0]!.since)) best = f;
    }
    return best;
  }

  /** A waiter taken out of its queue unseated (its wait ran out, or its client left). */
  private drop(w: Waiter, err: EdgeError): void {
    const i = w.flow.waiting.indexOf(w);
    if (i < 0) return;
    w.flow.waiting.splice(i, 1);
    if (w.flow.waiting.length === 0) this.queued.delete(w.flow);
    clearTimeout(w.timer);
    w.res.off("close", w.gone);
    this.forget(w.flow);
    w.refused(err);
    this.seatWaiting();
  }

  private flowOf(tenant: string): Flow {
    let f = this.flows.get(tenant);
    if (!f) {
      f = { key: tenant, inUse: 0, waiting: [] };
      this.flows.set(tenant, f);
    }
    return f;
  }

  /** A flow with nothing seated or waiting is dropped: the map holds only tenants asking now. */
  private forget(flow: Flow): void {
    if (flow.inUse === 0 && flow.waiting.length === 0) this.flows.delete(flow.key);
  }

  /**
   * Seconds until the tenant's queue has room again, as the seats have been going: its waiting
   * calls leave at the pace of the seats it holds (at least one), a seat per mean hold time.
   */
  private retryAfter(flow: Flow): number {
    const ms = ((flow.waiting.length + 1) * this.holdMs) / Math.max(1, flow.inUse);
    return Math.max(1, Math.ceil(ms / 1000));
  }
}

/** Each service's seats at this gateway, made as its first call comes. */
export class Seats {
  private readonly pools = new Map<string, SeatPool>();
  private readonly opts: SeatOptions;
  readonly enabled: boolean;

  constructor(opts: SeatOptions) {
    this.opts = opts;
    this.enabled = opts.seats > 0;
  }

  pool(service: string): SeatPool {
    let p = this.pools.get(service);
    if (!p) {
      p = new SeatPool(service, this.opts);
      this.pools.set(service, p);
    }
    return p;
  }

  /** Throws the 429 of `tenant`'s full share of `service` (SeatPool.refuseIfFull); nothing without seats. */
  refuseIfFull(service: string, tenant: string): void {
    if (this.enabled) this.pools.get(service)?.refuseIfFull(tenant);
  }

  /**
   * Runs `call` in a seat of `service` for `tenant`; the seat is given back when the call settles.
   * Without seats (VNM_SEATS_PER_SERVICE=0) the call runs at once.
   */
  async run<T>(service: string, tenant: string, res: ApiResponse, call: () => Promise<T>): Promise<T> {
    if (!this.enabled) return call();
    const pool = this.pool(service);
    const waiting = pool.take(tenant, res);
    if (waiting) await waiting;
    const started = performance.now();
    try {
      return await call();
    } finally {
      pool.give(tenant, performance.now() - started);
    }
  }
}

/** The flow a caller's calls are counted in: its tenant, or the user itself when it acts in none. */
export function flowOf(identity: { tenantId: string | null; userId: string }): string {
  return identity.tenantId ? `t:${identity.tenantId}` : `u:${identity.userId}`;
}
