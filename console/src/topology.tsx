// The topology page: the routers, bridges, ports, links and hosts the user can see (the tenant it
// acts in), as a picture. Which kinds these are comes from the catalog: the port kind is the one
// whose items name others of their own kind (a port's peerId); the devices are the kinds its
// items are created under (/routers/{routerId}/ports, /bridges/{bridgeId}/ports), in that order
// from the top; the hosts are the kind a port's field names whose items list bindings of ports
// (a port's hostId; /hosts/{id}/ports), for those who may see hosts. A port's device is the item
// its links lead to among the devices (its `device` link). It reads the API as the user, so a
// tenant sees its own part only, and redraws when the change feed says one of these kinds
// changed. Bounded: DEVICE_MAX devices, PORT_MAX ports and HOST_MAX hosts are read and drawn;
// beyond, the page says how many it left out and the lists have them all.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Identity } from "./api.ts";
import { onChange } from "./events.ts";
import { type Drawing, drawTopology, type TopoDevice, type TopoHost, type TopoPort } from "./graph.ts";
import { fillPath, itemName, itemPath, KINDS, visibleTo } from "./kinds.ts";
import type { ConsoleKind } from "./model.ts";
import { kindOfPath, listAll } from "./refs.tsx";
import { href } from "./route.ts";
import { ErrorNote, Notice, usePage } from "./ui.tsx";
import { inSentence } from "./words.ts";

export const DEVICE_MAX = 600;
export const PORT_MAX = 6000;
export const HOST_MAX = 200;

export interface TopologyKinds {
  port: ConsoleKind;
  /** The field of a port naming its peer, and the one naming its host. */
  peerField: string;
  hostField?: string;
  devices: ConsoleKind[];
  host?: ConsoleKind;
  /** The kind of a host's bound ports (its changes change the picture too). */
  binding?: ConsoleKind;
}

/** The kinds of the picture, from the catalog (undefined when the API serves no such kinds). */
export function topologyKinds(): TopologyKinds | undefined {
  for (const port of KINDS.values()) {
    const peer = port.fields.find((f) => f.ref === port.kind);
    if (!peer) continue;
    const devices = [...new Set(port.createTemplates.flatMap((t) => [...t.matchAll(/\{(\w+)\}/g)].map((m) => port.pathRefs[m[1]!]).filter((k): k is string => !!k)))]
      .map((k) => KINDS.get(k))
      .filter((k): k is ConsoleKind => !!k);
    if (devices.length === 0) continue;
    for (const f of port.fields) {
      const host = f.ref && f.ref !== port.kind ? KINDS.get(f.ref) : undefined;
      const binding = host?.children.map((c) => KINDS.get(c)).find((c) => c?.fields.some((x) => x.ref === port.kind));
      if (host && binding) return { port, peerField: peer.name, hostField: f.name, devices, host, binding };
    }
    return { port, peerField: peer.name, devices };
  }
  return undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: items of any kind
type Item = any;

interface Loaded {
  drawing: Drawing;
  counts: { kind: ConsoleKind; shown: number; more: boolean }[];
  links: number;
}

/** The id of the device a port's links lead to, among the device kinds. */
function deviceOf(tk: TopologyKinds, port: Item): string | undefined {
  for (const f of tk.port.fields) {
    const url = f.link ? port?.[f.name] : undefined;
    if (typeof url !== "string" || f.name === "uri") continue;
    const path = new URL(url, location.href).pathname;
    const k = kindOfPath(path);
    if (k && tk.devices.includes(k)) return decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));
  }
  return undefined;
}

/** Reads what the picture shows, as the user, within the bounds. */
async function load(tk: TopologyKinds, who: Identity): Promise<Loaded> {
  // An administrator acting in a tenant sees that tenant's part.
  const tenantOf = (k: ConsoleKind): Record<string, string> => (who.role === "admin" && who.tenantId && k.listQuery.includes("tenant_id") ? { tenant_id: who.tenantId } : {});
  const read = (k: ConsoleKind, max: number) => {
    const path = fillPath(k.listTemplates, undefined).path;
    return path ? listAll(k, path, max, tenantOf(k)) : Promise.resolve({ items: [] as Item[], more: false });
  };
  const counts: Loaded["counts"] = [];
  const devices: TopoDevice[] = [];
  let room = DEVICE_MAX;
  for (const [tier, k] of tk.devices.entries()) {
    const { items, more } = await read(k, room);
    room -= items.length;
    counts.push({ kind: k, shown: items.length, more });
    for (const i of items) {
      const path = itemPath(k, i);
      devices.push({ id: i.id, kindLabel: k.singular, tier, name: itemName(k, i, path), href: href({ page: "item", kind: k.kind, path }) });
    }
  }
  const ports = await read(tk.port, PORT_MAX);
  counts.push({ kind: tk.port, shown: ports.items.length, more: ports.more });
  const topoPorts: TopoPort[] = ports.items.flatMap((p: Item): TopoPort[] => {
    const deviceId = deviceOf(tk, p);
    if (!deviceId) return [];
    const path = itemPath(tk.port, p);
    const words = tk.port.columns.filter((c) => c !== "id" && typeof p[c] === "string" && p[c] !== "" && c !== tk.peerField).map((c) => p[c]);
    return [{ id: p.id, deviceId, peerId: p[tk.peerField], hostId: tk.hostField ? p[tk.hostField] : undefined, title: `${tk.port.singular} ${[...words, p.id].join(" · ")}`, href: href({ page: "item", kind: tk.port.kind, path }) }];
  });
  let hosts: TopoHost[] = [];
  if (tk.host && visibleTo(tk.host, who)) {
    const { items, more } = await read(tk.host, HOST_MAX);
    // Acting in a tenant, only the hosts its ports are bound to.
    const boundTo = new Set(topoPorts.map((p) => p.hostId).filter(Boolean));
    const shown = who.tenantId ? items.filter((h: Item) => boundTo.has(h.id)) : items;
    counts.push({ kind: tk.host, shown: shown.length, more });
    const k = tk.host;
    hosts = shown.map((h: Item) => {
      const path = itemPath(k, h);
      return { id: h.id, kindLabel: k.singular, name: itemName(k, h, path), href: href({ page: "item", kind: k.kind, path }) };
    });
  }
  const drawing = drawTopology(devices, topoPorts, hosts);
  return { drawing, counts, links: drawing.links.length };
}

const shorten = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function Picture({ drawing, zoom }: { drawing: Drawing; zoom: number }) {
  const { width, height } = drawing;
  return (
    <svg class="topology" width={Math.ceil(width * zoom)} height={Math.ceil(height * zoom)} viewBox={`0 0 ${Math.ceil(width)} ${Math.ceil(height)}`}>
      <title>Topology</title>
      <g class="topo-links">
        {drawing.links.map((l) => (
          <path key={`${l.from}|${l.to}`} class="topo-link" d={l.d} data-link={`${l.from}|${l.to}`}>
            <title>Link</title>
          </path>
        ))}
        {drawing.bindings.map((l) => (
          <path key={`${l.from}|${l.to}`} class="topo-binding" d={l.d} data-binding={`${l.from}|${l.to}`}>
            <title>Bound to the host</title>
          </path>
        ))}
      </g>
      {drawing.boxes.map((b) => (
        <a key={b.id} href={b.href} class={b.host ? "topo-node topo-host" : "topo-node"} data-node={b.id} data-kind={b.kindLabel}>
          <title>{`${b.kindLabel} ${b.name}`}</title>
          <rect x={b.x} y={b.y} width={b.width} height={b.height} rx={b.host ? 4 : 8} />
          <text x={b.x + b.width / 2} y={b.y + (b.host ? 14 : 17)} class="topo-kind">
            {b.kindLabel}
          </text>
          <text x={b.x + b.width / 2} y={b.y + (b.host ? 28 : 35)} class="topo-name">
            {shorten(b.name, Math.max(12, Math.floor(b.width / 8)))}
          </text>
        </a>
      ))}
      {drawing.dots.map((d) => (
        <a key={d.id} href={d.href} class={d.peerUnseen ? "topo-port topo-port-away" : "topo-port"} data-port={d.id} aria-label={d.title}>
          <title>{d.peerUnseen ? `${d.title} (linked to a port not shown)` : d.title}</title>
          <circle cx={d.x} cy={d.y} r={5} />
        </a>
      ))}
    </svg>
  );
}

export function TopologyPage({ who }: { who: Identity }) {
  const heading = usePage("Topology");
  const tk = topologyKinds();
  const [loaded, setLoaded] = useState<Loaded>();
  const [error, setError] = useState<unknown>();
  const [zoom, setZoom] = useState<number | undefined>();
  const wrap = useRef<HTMLElement>(null);
  const asked = useRef(0);

  const reload = useCallback(async () => {
    if (!tk) return;
    const n = ++asked.current;
    try {
      const l = await load(tk, who);
      if (n !== asked.current) return;
      setLoaded(l);
      setError(undefined);
    } catch (err) {
      if (n === asked.current) setError(err);
    }
  }, [who]);
  useEffect(() => {
    void reload();
  }, [reload]);

  // Live: a device, port, host or binding created, changed or deleted redraws the picture.
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => {
    if (!tk) return;
    const names = new Set([tk.port, ...tk.devices, tk.host, tk.binding].filter((k): k is ConsoleKind => !!k).map((k) => k.eventName));
    const off = onChange((c) => {
      if (c.event !== "resync" && !names.has(c.kind)) return;
      clearTimeout(timer.current);
      timer.current = setTimeout(() => void reload(), 250);
    });
    return () => {
      off();
      clearTimeout(timer.current);
    };
  }, [reload]);

  // The first picture fits the page's width (never drawn larger than life).
  useEffect(() => {
    if (!loaded || zoom !== undefined) return;
    const room = wrap.current?.clientWidth ?? loaded.drawing.width;
    setZoom(Math.min(1, Math.max(0.2, (room - 4) / loaded.drawing.width)));
  }, [loaded]);
  const z = zoom ?? 1;

  return (
    <div class="topology-page">
      <div class="list-head">
        <h1 tabindex={-1} ref={heading}>
          Topology
        </h1>
        <fieldset class="actions zoom-group">
          <legend class="visually-hidden">Zoom</legend>
          <button type="button" onClick={() => setZoom(Math.max(0.2, z / 1.25))} aria-label="Zoom out">
            −
          </button>
          <span class="zoom">{Math.round(z * 100)} %</span>
          <button type="button" onClick={() => setZoom(Math.min(3, z * 1.25))} aria-label="Zoom in">
            +
          </button>
        </fieldset>
      </div>
      {!tk && <Notice>The API serves no ports linking devices.</Notice>}
      <ErrorNote error={error} />
      {loaded && (
        <p class="topo-summary">
          {loaded.counts.map((c) => `${c.shown}${c.more ? "+" : ""} ${inSentence(c.shown === 1 ? c.kind.singular : c.kind.plural)}`).join(", ")}, {loaded.links} {loaded.links === 1 ? "link" : "links"}
          {who.tenantId ? ` in tenant ${who.tenantId}` : ""}.
        </p>
      )}
      {loaded?.counts.some((c) => c.more) && (
        <Notice>
          The picture shows the first {DEVICE_MAX} devices, {PORT_MAX} ports and {HOST_MAX} hosts; the lists have them all:{" "}
          {loaded.counts
            .filter((c) => c.more)
            .map((c) => inSentence(c.kind.plural))
            .join(", ")}{" "}
          go on beyond it.
        </Notice>
      )}
      <section class="topology-wrap" ref={wrap} aria-label="Topology picture">
        {loaded && <Picture drawing={loaded.drawing} zoom={z} />}
      </section>
      {loaded && (
        <p class="topo-legend">
          Boxes are devices (open one with a click), dots their ports, solid lines links between two ports
          {tk?.host && visibleTo(tk.host, who) ? ", dashed lines ports bound to a host" : ""}; a hollow dot is linked to a port not shown.
        </p>
      )}
    </div>
  );
}
