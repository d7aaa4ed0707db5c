// The topology's picture as shapes: devices (routers, bridges) as boxes with their ports as dots
// on their edges, a link between two ports as a line between their dots, hosts as boxes below
// with a dashed line to each port bound to them. dagre lays out each connected part in layers
// (routers above the bridges they link to, hosts below); the parts are then packed in rows, so a
// tenant of many unconnected bridges reads as a wall of boxes rather than one endless line.
// Pure: the page (topology.tsx) reads the API and draws what this returns.
import dagre from "@dagrejs/dagre";

export interface TopoDevice {
  id: string;
  /** The kind's word ("Router"), and its layer: lower tiers are drawn above. */
  kindLabel: string;
  tier: number;
  name: string;
  /** Where its page is (the console's address). */
  href: string;
}

export interface TopoPort {
  id: string;
  deviceId: string;
  peerId?: string | null;
  hostId?: string | null;
  /** What the dot says when pointed at ("Port 10.0.0.1/24"). */
  title: string;
  href: string;
}

export interface TopoHost {
  id: string;
  kindLabel: string;
  name: string;
  href: string;
}

export interface Box {
  id: string;
  kindLabel: string;
  name: string;
  href: string;
  x: number;
  y: number;
  width: number;
  height: number;
  host: boolean;
}

export interface Dot {
  id: string;
  deviceId: string;
  x: number;
  y: number;
  title: string;
  href: string;
  /** Linked to a port this picture does not show (another tenant's, or one past the bound). */
  peerUnseen: boolean;
}

export interface Line {
  /** The two ports (a link) or the port and the host (a binding). */
  from: string;
  to: string;
  d: string;
}

export interface Drawing {
  width: number;
  height: number;
  boxes: Box[];
  dots: Dot[];
  links: Line[];
  bindings: Line[];
}

const DEVICE_H = 46;
const HOST_H = 34;
const MIN_W = 150;
const DOT_GAP = 16;
const MAX_W = 640;
const ROW_W = 1600;
const PAD = 24;

/** The boxes' widths: room for the ports on one edge, within bounds (beyond, the dots are packed tighter). */
function widthOf(ports: number): number {
  return Math.min(MAX_W, Math.max(MIN_W, ports * DOT_GAP + 24));
}

function components(ids: string[], pairs: [string, string][]): string[][] {
  const up = new Map(ids.map((i) => [i, i]));
  const find = (i: string): string => {
    let r = i;
    while (up.get(r) !== r) r = up.get(r)!;
    up.set(i, r);
    return r;
  };
  for (const [a, b] of pairs) up.set(find(a), find(b));
  const groups = new Map<string, string[]>();
  for (const i of ids) {
    const r = find(i);
    groups.set(r, [...(groups.get(r) ?? []), i]);
  }
  return [...groups.values()].sort((a, b) => b.length - a.length || (a[0]! < b[0]! ? -1 : 1));
}

/** Each connected part laid out in layers by dagre, the parts packed in rows ROW_W wide. */
function placeParts(devices: TopoDevice[], hosts: TopoHost[], pairs: [string, string][], portsOf: Map<string, TopoPort[]>): Map<string, Box> {
  const boxes = new Map<string, Box>();
  const deviceById = new Map(devices.map((d) => [d.id, d]));
  const hostById = new Map(hosts.map((h) => [h.id, h]));
  let cursorX = PAD;
  let cursorY = PAD;
  let rowH = 0;
  for (const part of components([...devices.map((d) => d.id), ...hosts.map((h) => h.id)], pairs)) {
    const g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 90, edgesep: 12, marginx: 0, marginy: 0 });
    g.setDefaultEdgeLabel(() => ({}));
    const inPart = new Set(part);
    for (const id of part) {
      const d = deviceById.get(id);
      g.setNode(id, d ? { width: widthOf(portsOf.get(id)?.length ?? 0), height: DEVICE_H } : { width: MIN_W, height: HOST_H });
    }
    // Edges from the upper layer down: a router's link to a bridge goes down; hosts are lowest.
    const tierOf = (id: string) => deviceById.get(id)?.tier ?? Number.MAX_SAFE_INTEGER;
    let n = 0;
    for (const [a, b] of pairs) {
      if (!inPart.has(a)) continue;
      const [from, to] = tierOf(a) < tierOf(b) || (tierOf(a) === tierOf(b) && a < b) ? [a, b] : [b, a];
      if (from !== to) g.setEdge(from, to, {}, String(n++));
    }
    dagre.layout(g);
    const size = g.graph();
    const w = size.width ?? 0;
    const h = size.height ?? 0;
    if (cursorX > PAD && cursorX + w > ROW_W) {
      cursorX = PAD;
      cursorY += rowH + 60;
      rowH = 0;
    }
    for (const id of part) {
      const node = g.node(id);
      const d = deviceById.get(id);
      const host = hostById.get(id);
      boxes.set(id, {
        id,
        kindLabel: d ? d.kindLabel : (host?.kindLabel ?? ""),
        name: d ? d.name : (host?.name ?? id),
        href: d ? d.href : (host?.href ?? ""),
        x: cursorX + node.x - node.width / 2,
        y: cursorY + node.y - node.height / 2,
        width: node.width,
        height: node.height,
        host: !d,
      });
    }
    cursorX += w + 60;
    rowH = Math.max(rowH, h);
  }

  return boxes;
}

/** Ports on the edge facing what they lead to: up when their peer (or host) is above, else down; along the edge in the order of what they lead to, so lines cross less. */
function placeDots(devices: TopoDevice[], boxes: Map<string, Box>, portsOf: Map<string, TopoPort[]>, portById: Map<string, TopoPort>): Map<string, Dot> {
  const dots = new Map<string, Dot>();
  const centre = (b: Box) => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 });
  const towards = (p: TopoPort): Box | undefined => {
    const peer = p.peerId ? portById.get(p.peerId) : undefined;
    if (peer) return boxes.get(peer.deviceId);
    return p.hostId ? boxes.get(p.hostId) : undefined;
  };
  for (const d of devices) {
    const box = boxes.get(d.id)!;
    const mine = portsOf.get(d.id) ?? [];
    const top: TopoPort[] = [];
    const bottom: TopoPort[] = [];
    for (const p of mine) {
      const t = towards(p);
      (t && centre(t).y < box.y ? top : bottom).push(p);
    }
    for (const [row, y] of [
      [top, box.y],
      [bottom, box.y + box.height],
    ] as const) {
      const xOf = (p: TopoPort) => {
        const t = towards(p);
        return t ? centre(t).x : Number.POSITIVE_INFINITY;
      };
      const sorted = [...row].sort((a, b) => xOf(a) - xOf(b) || (a.id < b.id ? -1 : 1));
      const gap = Math.min(DOT_GAP, (box.width - 24) / Math.max(1, sorted.length));
      const start = box.x + box.width / 2 - (gap * (sorted.length - 1)) / 2;
      sorted.forEach((p, i) => {
        dots.set(p.id, { id: p.id, deviceId: d.id, x: start + gap * i, y, title: p.title, href: p.href, peerUnseen: !!p.peerId && !portById.has(p.peerId) });
      });
    }
  }

  return dots;
}

/** A link's line from dot to dot, a binding's from the dot to the host's top, as curves leaving each dot away from its box. */
function linesOf(linked: TopoPort[], bound: TopoPort[], dots: Map<string, Dot>, boxes: Map<string, Box>): { links: Line[]; bindings: Line[] } {
  const curve = (a: { x: number; y: number }, b: { x: number; y: number }, aDown: boolean, bDown: boolean) => {
    const bend = Math.max(30, Math.abs(b.y - a.y) / 2);
    return `M${a.x.toFixed(1)},${a.y.toFixed(1)} C${a.x.toFixed(1)},${(a.y + (aDown ? bend : -bend)).toFixed(1)} ${b.x.toFixed(1)},${(b.y + (bDown ? bend : -bend)).toFixed(1)} ${b.x.toFixed(1)},${b.y.toFixed(1)}`;
  };
  const isDown = (dot: Dot) => dot.y > boxes.get(dot.deviceId)!.y + 1;
  const links: Line[] = linked.map((p) => {
    const a = dots.get(p.id)!;
    const b = dots.get(p.peerId!)!;
    return { from: p.id, to: p.peerId!, d: curve(a, b, isDown(a), isDown(b)) };
  });
  const bindings: Line[] = bound.map((p) => {
    const a = dots.get(p.id)!;
    const h = boxes.get(p.hostId!)!;
    const top = { x: h.x + h.width / 2, y: h.y };
    return { from: p.id, to: p.hostId!, d: curve(a, top, isDown(a), top.y < a.y) };
  });

  return { links, bindings };
}

export function drawTopology(devices: TopoDevice[], ports: TopoPort[], hosts: TopoHost[]): Drawing {
  const deviceById = new Map(devices.map((d) => [d.id, d]));
  const hostById = new Map(hosts.map((h) => [h.id, h]));
  const shownPorts = ports.filter((p) => deviceById.has(p.deviceId));
  const portById = new Map(shownPorts.map((p) => [p.id, p]));
  const portsOf = new Map<string, TopoPort[]>();
  for (const p of shownPorts) portsOf.set(p.deviceId, [...(portsOf.get(p.deviceId) ?? []), p]);

  // Each link once (a port and its peer both say so), and each binding to a shown host.
  const linked = shownPorts.filter((p) => p.peerId && portById.has(p.peerId) && p.id < p.peerId);
  const bound = shownPorts.filter((p) => p.hostId && hostById.has(p.hostId));
  const pairs: [string, string][] = [...linked.map((p): [string, string] => [p.deviceId, portById.get(p.peerId!)!.deviceId]), ...bound.map((p): [string, string] => [p.deviceId, p.hostId!])];
  const shownHosts = hosts;

  const boxes = placeParts(devices, shownHosts, pairs, portsOf);

  const dots = placeDots(devices, boxes, portsOf, portById);
  const { links, bindings } = linesOf(linked, bound, dots, boxes);
  const width = Math.max(300, ...[...boxes.values()].map((b) => b.x + b.width + PAD));
  const height = Math.max(100, ...[...boxes.values()].map((b) => b.y + b.height + PAD));
  return { width, height, boxes: [...boxes.values()], dots: [...dots.values()], links, bindings };
}
