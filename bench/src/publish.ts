// Every write must be published: around a write row, the changes the bridge service committed
// (its successful CreateBridge/UpdateBridge calls, from its metrics) against the change
// notifications the deployment's JetStream stream stored.
import { setTimeout as sleep } from "node:timers/promises";
import { streamNames } from "@vnm/kit";
import type { NatsConnection } from "nats";

export type Ev = "created" | "updated" | "deleted";

export interface Publication {
  scenario: string;
  event: Ev;
  /** 2xx/3xx responses wrk saw (warm-up included). */
  acknowledged: number;
  /** Calls the bridge service completed (requests in flight when wrk stops still commit). */
  committed: number;
  published: number;
  waitedMs: number;
  match: boolean;
}


/** The sum of a Prometheus family's samples whose labels match `labels`. */
function sample(text: string, family: string, labels: RegExp = /.*/): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${family}(?:\\{([^}]*)\\})? (\\S+)$`, "gm"))) if (labels.test(m[1] ?? "")) sum += Number(m[2]);
  return sum;
}

export class Publications {
  readonly list: Publication[] = [];
  private readonly nc: NatsConnection;
  private readonly prefix: string;
  private readonly metrics: () => Promise<string>;

  /** `metrics`: the bridge service's Prometheus text. */
  constructor(nc: NatsConnection, prefix: string, metrics: () => Promise<string>) {
    this.nc = nc;
    this.prefix = prefix;
    this.metrics = metrics;
  }

  get stream(): string {
    return streamNames(this.prefix)[0]!;
  }

  /**
   * Messages of one event the stream holds (JetStream counts them per subject). Read after a
   * run rather than heard live: a subscriber in the bench would take CPU the stack needs.
   */
  async stored(event?: Ev): Promise<number> {
    const jsm = await this.nc.jetstreamManager();
    if (!event) return (await jsm.streams.info(this.stream)).state.messages;
    const info = await jsm.streams.info(this.stream, { subjects_filter: `${this.prefix}.*.*.${event}` });
    return Object.values(info.state.subjects ?? {}).reduce((a, n) => a + n, 0);
  }

  /** Waits until the count of `rpc`'s completed calls stops moving and the outbox is empty (at most 15 s); gives that count. */
  private async settle(rpc: string): Promise<number> {
    const until = Date.now() + 15_000;
    let last = -1;
    for (;;) {
      const text = await this.metrics();
      const done = sample(text, "vnm_grpc_server_calls_total", new RegExp(`method="[^"]*${rpc}".*code="OK"|code="OK".*method="[^"]*${rpc}"`));
      if ((done === last && sample(text, "vnm_outbox_backlog") === 0) || Date.now() > until) return done;
      last = done;
      await sleep(250);
    }
  }

  /** Runs a write row (`run` gives its acknowledged writes) and checks every committed change was published. */
  async check(name: string, event: Ev, rpc: string, run: () => Promise<number>): Promise<void> {
    const done0 = await this.settle(rpc);
    const stored0 = await this.stored(event);
    const acknowledged = await run();
    const t0 = Date.now();
    const committed = (await this.settle(rpc)) - done0;
    while ((await this.stored(event)) - stored0 < committed && Date.now() - t0 < 15_000) await sleep(50);
    await sleep(200); // anything beyond the committed count would show up now
    const published = (await this.stored(event)) - stored0;
    const p = { scenario: name, event, acknowledged, committed, published, waitedMs: Date.now() - t0, match: published === committed };
    this.list.push(p);
    console.log(
      `      ${name}: ${acknowledged} acknowledged (2xx incl. warm-up), ${committed} committed, ${published} "${event}" messages stored in ${this.stream} (${p.waitedMs} ms after the run)`,
    );
  }
}
