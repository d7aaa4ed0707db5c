// The VXLAN ports of bound bridges, made whole after any failure. A binding written or deleted
// queues its (bridge, VTEP) pair in vxlan_port_sync, in the binding's own transaction (an
// outbox of work). This worker, on every replica, takes one queued pair at a time, locked (FOR
// UPDATE SKIP LOCKED: replicas take different pairs, and a binding write of that pair waits for
// the answer), reads whether the bridge still has a binding on the VTEP, and asks the routing
// service to make its VXLAN port exist or not (SyncVxlanPort: idempotent, the port's id derived
// from the pair; routing sets the bridge's vxlanPortIds before it answers). The pair leaves the
// queue only with that answer: a routing or bridge service down, a call cut short, a replica
// killed mid-way, each leaves it queued, and it is asked again (every POLL_MS, a failed pair
// after RETRY_S).
import { type Logger, messageOf, type ServiceContext } from "@vnm/kit";

const POLL_MS = 500;
const RETRY_S = 2;

interface Pending {
  bridge_id: string;
  vtep_id: string;
}

export class VxlanPortSync {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private again = false;
  private readonly log: Logger;
  private readonly svc: Pick<ServiceContext, "store" | "call" | "log">;

  constructor(svc: Pick<ServiceContext, "store" | "call" | "log">) {
    this.svc = svc;
    this.log = svc.log;
  }

  start(): void {
    this.timer = setInterval(() => void this.run(), POLL_MS);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Something was queued (or may be): work soon rather than at the next poll. */
  kick(): void {
    setTimeout(() => void this.run(), 50);
  }

  private async run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        while (this.timer && (await this.one())) {}
      } while (this.again && this.timer);
    } finally {
      this.running = false;
    }
  }

  /** Handles the oldest queued pair that is due and not taken; false when there is none (or it failed). */
  private async one(): Promise<boolean> {
    let pair: Pending | undefined;
    try {
      return await this.svc.store.tx(undefined, async (q) => {
        pair = (await q.query<Pending>("SELECT bridge_id, vtep_id FROM vxlan_port_sync WHERE due <= now() ORDER BY due LIMIT 1 FOR UPDATE SKIP LOCKED")).rows[0];
        if (!pair) return false;
        const bound = ((await q.query("SELECT 1 FROM vtep_bindings WHERE bridge_id = $1 AND vtep_id = $2 LIMIT 1", [pair.bridge_id, pair.vtep_id])).rowCount ?? 0) > 0;
        await this.svc.call("vnm.routing.v1.VxlanPortService", "SyncVxlanPort", { bridgeId: pair.bridge_id, vtepId: pair.vtep_id, bound });
        await q.query("DELETE FROM vxlan_port_sync WHERE bridge_id = $1 AND vtep_id = $2", [pair.bridge_id, pair.vtep_id]);
        return true;
      });
    } catch (err) {
      if (!pair) {
        this.log.warn("VXLAN port queue not read; trying again", { err: messageOf(err) });
        return false;
      }
      const { bridge_id, vtep_id } = pair;
      this.log.warn("VXLAN port not synced with the routing service yet; trying again", { bridge: bridge_id, vtep: vtep_id, err: messageOf(err) });
      await this.svc.store
        .query(`UPDATE vxlan_port_sync SET due = now() + interval '${RETRY_S} seconds' WHERE bridge_id = $1 AND vtep_id = $2`, [bridge_id, vtep_id])
        .catch(() => undefined);
      return true;
    }
  }
}
