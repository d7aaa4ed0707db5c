// The tunnel service's own metric families: why VTEP sessions end on the device's account, and
// how many VTEPs this replica watches in each connection state (docs/operations.md, "Devices").
import { Counter, Gauge, type Registry } from "prom-client";
import type { ConnectionState } from "./device.ts";

export interface VtepMetrics {
  faults: Counter<"reason">;
}

/** Registers the families on `registry`; `states` is read at each scrape. */
export function vtepMetrics(registry: Registry, states: () => Iterable<ConnectionState>): VtepMetrics {
  const registers = [registry];
  const faults = new Counter({ name: "vnm_vtep_session_faults_total", help: "VTEP sessions ended on the device's account (a bound, the protocol, no answer), by reason", labelNames: ["reason"], registers });
  new Gauge({
    name: "vnm_vtep_sessions",
    help: "VTEPs this replica watches, by connection state",
    labelNames: ["state"],
    registers,
    collect() {
      const counts: Record<ConnectionState, number> = { connected: 0, disconnected: 0, error: 0 };
      for (const s of states()) counts[s]++;
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
  return { faults };
}
