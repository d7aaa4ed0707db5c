// What a VTEP's page shows besides its fields and linked lists (issue 53): why it is in error, set
// apart at the top, and the MACs its device learned: for each bridge bound to it, the entries of
// the bridge's MAC table on the bridge's VXLAN port for this VTEP (where the tunnel service puts
// the device's Ucast_Macs_Local rows), with the ARP table's IP for each. Read again with the item
// and whenever a bound bridge's MAC or ARP table, or a binding, changes.
import { useEffect, useState } from "preact/hooks";
import { call } from "./api.ts";
import { onChange } from "./events.ts";
import { href } from "./route.ts";
import { ErrorNote } from "./ui.tsx";

export const VTEP_KIND = "tunnel.Vtep";

interface Learned {
  bridgeId: string;
  mac: string;
  ip: string;
}

const list = async (path: string): Promise<Record<string, unknown>[]> => {
  const body = (await call("GET", path)).body;
  return Array.isArray(body) ? body : [];
};

/** The MACs the device learned, bridge by bridge (in binding order), each bridge's by MAC. */
async function learnedMacs(vtepPath: string, vtepId: string): Promise<Learned[]> {
  const bridges = [...new Set((await list(`${vtepPath}/bindings`)).map((b) => String(b["networkId"])))];
  const out: Learned[] = [];
  for (const bridgeId of bridges) {
    const base = `/bridges/${encodeURIComponent(bridgeId)}`;
    const port = (await list(`${base}/vxlan_ports`)).find((p) => p["vtepId"] === vtepId);
    if (!port) continue; // made shortly after the binding
    const [macs, arp] = await Promise.all([list(`${base}/mac_table`), list(`${base}/arp_table`)]);
    const ipOf = new Map(arp.map((a) => [String(a["mac"]).toLowerCase(), String(a["ip"])]));
    for (const m of macs.filter((e) => e["portId"] === port["id"]).sort((a, b) => String(a["macAddr"]).localeCompare(String(b["macAddr"])))) {
      const mac = String(m["macAddr"]).toLowerCase();
      out.push({ bridgeId, mac, ip: ipOf.get(mac) ?? "" });
    }
  }
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: the VTEP as the API gives it
export function VtepDetails({ path, item, version }: { path: string; item: any; version: number }) {
  const [learned, setLearned] = useState<Learned[] | undefined>();
  const [error, setError] = useState<unknown>();
  const [again, setAgain] = useState(0);
  const vtepId = String(item.id);
  useEffect(() => {
    let current = true;
    learnedMacs(path, vtepId).then(
      (l) => {
        if (!current) return;
        setLearned(l);
        setError(undefined);
      },
      (err) => current && setError(err),
    );
    return () => {
      current = false;
    };
  }, [path, vtepId, version, again]);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = onChange((c) => {
      const bound = c.kind === "MacPort" || c.kind === "IP4Mac" ? c.path.startsWith("/bridges/") : c.kind === "VTEPBinding" ? c.path.startsWith(`${path}/`) : c.event === "resync";
      if (!bound || timer) return;
      // A burst of changes (a device learning many MACs) is read once.
      timer = setTimeout(() => {
        timer = undefined;
        setAgain((n) => n + 1);
      }, 200);
    });
    return () => {
      off();
      clearTimeout(timer);
    };
  }, [path]);
  return (
    <>
      {item.connectionState === "error" && (
        <p class="error" role="alert" id="vtep-error">
          In error: {item.connectionError ?? "no reason given"}
        </p>
      )}
      <div class="list">
        <div class="list-head">
          <h2 id="vtep-learned">Learned MACs</h2>
        </div>
        <ErrorNote error={error} />
        {learned && learned.length === 0 && <p>None.</p>}
        {learned && learned.length > 0 && (
          <section class="table-wrap" tabindex={0} aria-labelledby="vtep-learned">
            <table>
              <thead>
                <tr>
                  <th scope="col">Bridge</th>
                  <th scope="col">MAC</th>
                  <th scope="col">IP</th>
                </tr>
              </thead>
              <tbody>
                {learned.map((l) => (
                  <tr key={`${l.bridgeId} ${l.mac}`}>
                    <td data-label="Bridge">
                      <a href={href({ page: "item", kind: "bridge.Bridge", path: `/bridges/${encodeURIComponent(l.bridgeId)}` })}>{l.bridgeId}</a>
                    </td>
                    <td data-label="MAC">{l.mac}</td>
                    <td data-label="IP">{l.ip || "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        )}
      </div>
    </>
  );
}
