// The topology's shapes from lists as the API answers them (recorded JSON, reduced to the fields
// the page reads): every device a box, every port a dot on its device's edge, every link one line
// from dot to dot, a binding a line to its host, no two boxes overlapping.
import { expect, it } from "vitest";
import { type Box, drawTopology, type TopoDevice, type TopoPort } from "./graph.ts";

const dev = (id: string, kindLabel: string, tier: number): TopoDevice => ({ id, kindLabel, tier, name: `${kindLabel.toLowerCase()}-${id}`, href: `#/${id}` });
const port = (id: string, deviceId: string, peerId?: string, hostId?: string): TopoPort => ({ id, deviceId, peerId, hostId, title: `Port ${id}`, href: `#/${id}` });
const overlap = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

it("draws two routers and three bridges with their ports and links, routers above the bridges they link", () => {
  const devices = [dev("r1", "Router", 0), dev("r2", "Router", 0), dev("b1", "Bridge", 1), dev("b2", "Bridge", 1), dev("b3", "Bridge", 1)];
  const ports = [
    port("p1", "r1", "p2"),
    port("p2", "b1", "p1"),
    port("p3", "r1", "p4"),
    port("p4", "r2", "p3"),
    port("p5", "r2", "p6"),
    port("p6", "b2", "p5"),
    port("p7", "b3"),
    port("p8", "b1", "elsewhere"),
    port("p9", "gone-device"),
  ];
  const d = drawTopology(devices, ports, []);
  expect(d.boxes.map((b) => b.id).sort()).toEqual(["b1", "b2", "b3", "r1", "r2"]);
  // A port of a device not drawn is not drawn either.
  expect(d.dots.map((p) => p.id).sort()).toEqual(["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"]);
  expect(d.links.map((l) => `${l.from}|${l.to}`).sort()).toEqual(["p1|p2", "p3|p4", "p5|p6"]);
  expect(d.dots.find((p) => p.id === "p8")?.peerUnseen).toBe(true);
  const box = new Map(d.boxes.map((b) => [b.id, b]));
  expect(box.get("r1")!.y).toBeLessThan(box.get("b1")!.y);
  expect(box.get("r2")!.y).toBeLessThan(box.get("b2")!.y);
  for (const a of d.boxes) for (const b of d.boxes) if (a !== b) expect(overlap(a, b), `${a.id} ${b.id}`).toBe(false);
  // Each dot sits on its device's top or bottom edge; each link starts and ends at its dots.
  for (const p of d.dots) {
    const b = box.get(p.deviceId)!;
    expect([b.y, b.y + b.height]).toContain(p.y);
    expect(p.x).toBeGreaterThanOrEqual(b.x);
    expect(p.x).toBeLessThanOrEqual(b.x + b.width);
  }
  const dot = new Map(d.dots.map((p) => [p.id, p]));
  for (const l of d.links) {
    expect(l.d.startsWith(`M${dot.get(l.from)!.x.toFixed(1)},${dot.get(l.from)!.y.toFixed(1)}`)).toBe(true);
    expect(l.d.endsWith(`${dot.get(l.to)!.x.toFixed(1)},${dot.get(l.to)!.y.toFixed(1)}`)).toBe(true);
  }
  for (const b of d.boxes) expect(b.x + b.width).toBeLessThanOrEqual(d.width);
});

it("draws a host below the device whose port is bound to it, with a line to the port", () => {
  const d = drawTopology([dev("b1", "Bridge", 0)], [port("p1", "b1", undefined, "h1")], [{ id: "h1", kindLabel: "Host", name: "compute-1", href: "#/h1" }]);
  const [bridge, host] = [d.boxes.find((b) => b.id === "b1")!, d.boxes.find((b) => b.id === "h1")!];
  expect(host.host).toBe(true);
  expect(host.y).toBeGreaterThan(bridge.y);
  expect(d.bindings).toEqual([expect.objectContaining({ from: "p1", to: "h1" })]);
});

it("stays bounded for a tenant of a few hundred devices: unconnected parts packed in rows, laid out quickly", () => {
  const devices: TopoDevice[] = [];
  const ports: TopoPort[] = [];
  for (let r = 0; r < 50; r++) {
    devices.push(dev(`r${r}`, "Router", 0));
    for (let b = 0; b < 4; b++) {
      devices.push(dev(`b${r}-${b}`, "Bridge", 1));
      ports.push(port(`rp${r}-${b}`, `r${r}`, `bp${r}-${b}`), port(`bp${r}-${b}`, `b${r}-${b}`, `rp${r}-${b}`));
    }
  }
  for (let b = 0; b < 100; b++) devices.push(dev(`lonely${b}`, "Bridge", 1));
  const started = performance.now();
  const d = drawTopology(devices, ports, []);
  const ms = performance.now() - started;
  expect(d.boxes).toHaveLength(350);
  expect(d.links).toHaveLength(200);
  // Rows, not one line 350 boxes long.
  expect(d.width).toBeLessThan(2000);
  expect(ms).toBeLessThan(5_000);
});
