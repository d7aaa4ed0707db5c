// DHCP subnets (IPv4) with their hosts, and DHCPv6 subnets, under /bridges/:bridgeId.
import {
  ApiError,
  type CallContext,
  canonicalIpv6,
  type Handlers,
  int,
  ipv4,
  ipv4InSubnet,
  ipv6,
  isIpv4,
  mac,
  PG,
  parseInput,
  parseMac,
  pathId,
  pgCode,
  type Queryable,
  type Store,
  text,
} from "@vnm/kit";
import { z } from "zod";
import { hostChange, subnet6Change, subnetAddr, subnetChange } from "./locations.ts";
import { type ParentBridge, requireBridge } from "./parent.ts";

const subnetInput = z.object({
  subnetPrefix: ipv4(),
  subnetLength: int(0, 32),
  defaultGateway: ipv4().optional(),
  serverAddr: ipv4().optional(),
  dnsServerAddrs: z.array(ipv4()).max(16, "must hold at most 16 addresses").optional(),
  interfaceMTU: int(0, 65536).optional(),
  opt121Routes: z
    .array(z.object({ destinationPrefix: ipv4(), destinationLength: int(0, 32), gatewayAddr: ipv4() }))
    .max(64, "must hold at most 64 routes")
    .optional(),
  enabled: z.boolean().optional(),
});

const hostInput = z.object({
  macAddr: mac(),
  ipAddr: ipv4(),
  name: text(255),
  extraDhcpOpts: z
    .array(z.object({ optName: text(255), optValue: text(1024) }))
    .max(64, "must hold at most 64 options")
    .optional(),
});

const subnet6Input = z.object({ prefix: ipv6(), prefixLength: int(0, 128) });

interface SubnetRow {
  id: string;
  bridge_id: string;
  prefix: string;
  length: number;
  default_gateway: string | null;
  server_addr: string | null;
  dns_server_addrs: string[];
  interface_mtu: number | null;
  opt121_routes: unknown[];
  enabled: boolean;
}

interface HostRow {
  id: string;
  mac: string;
  ip: string;
  name: string;
  extra_dhcp_opts: unknown[];
}

interface Subnet6Row {
  id: string;
  bridge_id: string;
  prefix: string;
  length: number;
}

const SUBNET_COLS =
  "id, bridge_id, prefix, length, default_gateway, server_addr, dns_server_addrs, interface_mtu, opt121_routes, enabled";
const HOST_COLS = "id, mac, ip, name, extra_dhcp_opts";


function subnetMessage(r: SubnetRow): Record<string, unknown> {
  const m: Record<string, unknown> = {
    bridgeId: r.bridge_id,
    subnetPrefix: r.prefix,
    subnetLength: r.length,
    dnsServerAddrs: r.dns_server_addrs,
    opt121Routes: r.opt121_routes,
    enabled: r.enabled,
  };
  if (r.default_gateway !== null) m["defaultGateway"] = r.default_gateway;
  if (r.server_addr !== null) m["serverAddr"] = r.server_addr;
  if (r.interface_mtu !== null) m["interfaceMTU"] = r.interface_mtu;
  return m;
}

function hostMessage(bridgeId: string, s: SubnetRow, r: HostRow): Record<string, unknown> {
  return {
    bridgeId,
    subnetAddr: subnetAddr(s),
    macAddr: r.mac,
    ipAddr: r.ip,
    name: r.name,
    extraDhcpOpts: r.extra_dhcp_opts,
  };
}

function subnet6Message(r: Subnet6Row): Record<string, unknown> {
  return { bridgeId: r.bridge_id, prefix: r.prefix, prefixLength: r.length };
}

/** A `:subnetAddr` path segment: <address>_<length> (length defaults to the full width). */
export function parseSubnetAddr(segment: string, family: 4 | 6): { prefix: string; length: number } | undefined {
  const i = segment.lastIndexOf("_");
  const rawAddr = i < 0 ? segment : segment.slice(0, i);
  const rawLen = i < 0 ? (family === 4 ? "32" : "128") : segment.slice(i + 1);
  if (!/^\d{1,3}$/.test(rawLen)) return undefined;
  const length = Number(rawLen);
  if (length > (family === 4 ? 32 : 128)) return undefined;
  const prefix = family === 4 ? (isIpv4(rawAddr) ? rawAddr : undefined) : canonicalIpv6(rawAddr);
  return prefix === undefined ? undefined : { prefix, length };
}

const subnetMissing = (bridgeId: string, segment: string) =>
  ApiError.notFound(`Bridge ${bridgeId} has no DHCP subnet with address ${segment}.`);
const subnet6Missing = (bridgeId: string, segment: string) =>
  ApiError.notFound(`Bridge ${bridgeId} has no DHCPv6 subnet with address ${segment}.`);

function writableSubnet(s: z.output<typeof subnetInput>): unknown[] {
  return [
    s.subnetPrefix,
    s.subnetLength,
    s.defaultGateway ?? null,
    s.serverAddr ?? null,
    s.dnsServerAddrs ?? [],
    s.interfaceMTU ?? null,
    JSON.stringify(s.opt121Routes ?? []),
    s.enabled ?? true,
  ];
}

function hostsOutside(hosts: { mac: string; ip: string }[], prefix: string, length: number): string[] {
  return hosts.filter((h) => !ipv4InSubnet(h.ip, prefix, length)).map((h) => h.mac);
}

export function dhcpHandlers(store: Store): Handlers {
  const bridgeOf = (req: { bridgeId: string }) => pathId(req.bridgeId, "Bridge");

  /** The subnet at a path segment, with a row lock when writing. */
  async function findSubnet(q: Queryable, bridgeId: string, segment: string, lock = false): Promise<SubnetRow> {
    const at = parseSubnetAddr(segment, 4);
    if (!at) throw subnetMissing(bridgeId, segment);
    const r = await q.query<SubnetRow>(
      `SELECT ${SUBNET_COLS} FROM dhcp_subnets WHERE bridge_id = $1 AND prefix = $2 AND length = $3${lock ? " FOR UPDATE" : ""}`,
      [bridgeId, at.prefix, at.length],
    );
    if (!r.rows[0]) throw subnetMissing(bridgeId, segment);
    return r.rows[0];
  }

  async function findSubnet6(q: Queryable, bridgeId: string, segment: string, lock = false): Promise<Subnet6Row> {
    const at = parseSubnetAddr(segment, 6);
    if (!at) throw subnet6Missing(bridgeId, segment);
    const r = await q.query<Subnet6Row>(
      `SELECT id, bridge_id, prefix, length FROM dhcp6_subnets WHERE bridge_id = $1 AND prefix = $2 AND length = $3${lock ? " FOR UPDATE" : ""}`,
      [bridgeId, at.prefix, at.length],
    );
    if (!r.rows[0]) throw subnet6Missing(bridgeId, segment);
    return r.rows[0];
  }

  const subnetConflict = (b: ParentBridge, s: { subnetPrefix: string; subnetLength: number }) =>
    ApiError.conflict(`The DHCP subnet ${s.subnetPrefix}/${s.subnetLength} already exists on bridge ${b.id}.`);
  const hostConflict = (b: ParentBridge, s: SubnetRow, macAddr: string) =>
    ApiError.conflict(`Subnet ${s.prefix}/${s.length} on bridge ${b.id} already has a host with MAC address ${macAddr}.`);

  return {
    // ---- IPv4 subnets ----
    async ListDhcpSubnets(req: { bridgeId: string }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      const r = await store.query<SubnetRow>(`SELECT ${SUBNET_COLS} FROM dhcp_subnets WHERE bridge_id = $1 ORDER BY id`, [b]);
      return { items: r.rows.map(subnetMessage) };
    },

    async GetDhcpSubnet(req: { bridgeId: string; subnetAddr: string }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      return subnetMessage(await findSubnet(store.pool, b, req.subnetAddr));
    },

    async CreateDhcpSubnet(req: { bridgeId: string; subnet?: unknown }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const s = parseInput(subnetInput, req.subnet ?? {});
        const r = await q.query<SubnetRow>(
          `INSERT INTO dhcp_subnets (bridge_id, prefix, length, default_gateway, server_addr, dns_server_addrs,
             interface_mtu, opt121_routes, enabled)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (bridge_id, prefix, length) DO NOTHING RETURNING ${SUBNET_COLS}`,
          [b, ...writableSubnet(s)],
        );
        const row = r.rows[0];
        if (!row) throw subnetConflict(bridge, s);
        emit(subnetChange("created", bridge, row));
        return subnetMessage(row);
      });
    },

    async UpdateDhcpSubnet(req: { bridgeId: string; subnetAddr: string; subnet?: unknown }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const current = await findSubnet(q, b, req.subnetAddr, true);
        const s = parseInput(subnetInput, req.subnet ?? {});
        const hosts = (await q.query<{ mac: string; ip: string }>("SELECT mac, ip FROM dhcp_hosts WHERE subnet_id = $1", [current.id])).rows;
        const outside = hostsOutside(hosts, s.subnetPrefix, s.subnetLength);
        if (outside.length > 0) {
          throw ApiError.conflict(
            `Subnet ${s.subnetPrefix}/${s.subnetLength} would leave hosts outside it (${outside.slice(0, 5).join(", ")}${outside.length > 5 ? ", ..." : ""}); move or delete them first.`,
          );
        }
        let row: SubnetRow | undefined;
        try {
          row = (
            await q.query<SubnetRow>(
              `UPDATE dhcp_subnets SET prefix = $2, length = $3, default_gateway = $4, server_addr = $5,
                 dns_server_addrs = $6, interface_mtu = $7, opt121_routes = $8, enabled = $9
               WHERE id = $1 RETURNING ${SUBNET_COLS}`,
              [current.id, ...writableSubnet(s)],
            )
          ).rows[0];
        } catch (err) {
          if (pgCode(err) === PG.uniqueViolation) throw subnetConflict(bridge, s);
          throw err;
        }
        if (!row) throw subnetMissing(b, req.subnetAddr);
        const moved = row.prefix !== current.prefix || row.length !== current.length;
        if (moved) {
          emit(subnetChange("deleted", bridge, current));
          emit(subnetChange("created", bridge, row));
        } else {
          emit(subnetChange("updated", bridge, row));
        }
        return subnetMessage(row);
      });
    },

    async DeleteDhcpSubnet(req: { bridgeId: string; subnetAddr: string }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const s = await findSubnet(q, b, req.subnetAddr, true);
        const hosts = await q.query<{ mac: string }>("DELETE FROM dhcp_hosts WHERE subnet_id = $1 RETURNING mac", [s.id]);
        await q.query("DELETE FROM dhcp_subnets WHERE id = $1", [s.id]);
        for (const h of hosts.rows) {
          emit(hostChange("deleted", bridge, s, h.mac));
        }
        emit(subnetChange("deleted", bridge, s));
        return {};
      });
    },

    // ---- hosts ----
    async ListDhcpHosts(req: { bridgeId: string; subnetAddr: string }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      const s = await findSubnet(store.pool, b, req.subnetAddr);
      const r = await store.query<HostRow>(`SELECT ${HOST_COLS} FROM dhcp_hosts WHERE subnet_id = $1 ORDER BY id`, [s.id]);
      return { items: r.rows.map((h) => hostMessage(b, s, h)) };
    },

    async GetDhcpHost(req: { bridgeId: string; subnetAddr: string; hostMac: string }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      const s = await findSubnet(store.pool, b, req.subnetAddr);
      const m = parseMac(req.hostMac);
      const r = m ? await store.query<HostRow>(`SELECT ${HOST_COLS} FROM dhcp_hosts WHERE subnet_id = $1 AND mac = $2`, [s.id, m]) : undefined;
      const row = r?.rows[0];
      if (!row) throw hostMissing(s, req.hostMac);
      return hostMessage(b, s, row);
    },

    async CreateDhcpHost(req: { bridgeId: string; subnetAddr: string; host?: unknown }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const s = await findSubnet(q, b, req.subnetAddr);
        const h = parseInput(hostInput, req.host ?? {});
        checkInside(h.ipAddr, s);
        const r = await q.query<HostRow>(
          `INSERT INTO dhcp_hosts (subnet_id, mac, ip, name, extra_dhcp_opts) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (subnet_id, mac) DO NOTHING RETURNING ${HOST_COLS}`,
          [s.id, h.macAddr, h.ipAddr, h.name, JSON.stringify(h.extraDhcpOpts ?? [])],
        );
        const row = r.rows[0];
        if (!row) throw hostConflict(bridge, s, h.macAddr);
        emit(hostChange("created", bridge, s, row.mac));
        return hostMessage(b, s, row);
      });
    },

    async UpdateDhcpHost(req: { bridgeId: string; subnetAddr: string; hostMac: string; host?: unknown }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const s = await findSubnet(q, b, req.subnetAddr, true);
        const current = parseMac(req.hostMac);
        const exists = current
          ? (await q.query("SELECT 1 FROM dhcp_hosts WHERE subnet_id = $1 AND mac = $2 FOR UPDATE", [s.id, current])).rowCount
          : 0;
        if (!current || !exists) throw hostMissing(s, req.hostMac);
        const h = parseInput(hostInput, req.host ?? {});
        checkInside(h.ipAddr, s);
        let row: HostRow | undefined;
        try {
          row = (
            await q.query<HostRow>(
              `UPDATE dhcp_hosts SET mac = $3, ip = $4, name = $5, extra_dhcp_opts = $6
               WHERE subnet_id = $1 AND mac = $2 RETURNING ${HOST_COLS}`,
              [s.id, current, h.macAddr, h.ipAddr, h.name, JSON.stringify(h.extraDhcpOpts ?? [])],
            )
          ).rows[0];
        } catch (err) {
          if (pgCode(err) === PG.uniqueViolation) throw hostConflict(bridge, s, h.macAddr);
          throw err;
        }
        if (!row) throw hostMissing(s, req.hostMac);
        if (row.mac !== current) {
          emit(hostChange("deleted", bridge, s, current));
          emit(hostChange("created", bridge, s, row.mac));
        } else {
          emit(hostChange("updated", bridge, s, row.mac));
        }
        return hostMessage(b, s, row);
      });
    },

    async DeleteDhcpHost(req: { bridgeId: string; subnetAddr: string; hostMac: string }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const s = await findSubnet(q, b, req.subnetAddr);
        const m = parseMac(req.hostMac);
        const r = m ? await q.query<{ mac: string }>("DELETE FROM dhcp_hosts WHERE subnet_id = $1 AND mac = $2 RETURNING mac", [s.id, m]) : undefined;
        if (!r?.rows[0]) throw hostMissing(s, req.hostMac);
        emit(hostChange("deleted", bridge, s, m!));
        return {};
      });
    },

    // ---- IPv6 subnets ----
    async ListDhcpV6Subnets(req: { bridgeId: string }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      const r = await store.query<Subnet6Row>("SELECT id, bridge_id, prefix, length FROM dhcp6_subnets WHERE bridge_id = $1 ORDER BY id", [b]);
      return { items: r.rows.map(subnet6Message) };
    },

    async GetDhcpV6Subnet(req: { bridgeId: string; subnetAddr: string }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      return subnet6Message(await findSubnet6(store.pool, b, req.subnetAddr));
    },

    async CreateDhcpV6Subnet(req: { bridgeId: string; subnet?: unknown }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const s = parseInput(subnet6Input, req.subnet ?? {});
        const r = await q.query<Subnet6Row>(
          `INSERT INTO dhcp6_subnets (bridge_id, prefix, length) VALUES ($1, $2, $3)
           ON CONFLICT (bridge_id, prefix, length) DO NOTHING RETURNING id, bridge_id, prefix, length`,
          [b, s.prefix, s.prefixLength],
        );
        const row = r.rows[0];
        if (!row) throw ApiError.conflict(`The DHCPv6 subnet ${s.prefix}/${s.prefixLength} already exists on bridge ${b}.`);
        emit(subnet6Change("created", bridge, row));
        return subnet6Message(row);
      });
    },

    async UpdateDhcpV6Subnet(req: { bridgeId: string; subnetAddr: string; subnet?: unknown }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const current = await findSubnet6(q, b, req.subnetAddr, true);
        const s = parseInput(subnet6Input, req.subnet ?? {});
        let row: Subnet6Row | undefined;
        try {
          row = (
            await q.query<Subnet6Row>("UPDATE dhcp6_subnets SET prefix = $2, length = $3 WHERE id = $1 RETURNING id, bridge_id, prefix, length", [
              current.id,
              s.prefix,
              s.prefixLength,
            ])
          ).rows[0];
        } catch (err) {
          if (pgCode(err) === PG.uniqueViolation) {
            throw ApiError.conflict(`The DHCPv6 subnet ${s.prefix}/${s.prefixLength} already exists on bridge ${b}.`);
          }
          throw err;
        }
        if (!row) throw subnet6Missing(b, req.subnetAddr);
        if (row.prefix !== current.prefix || row.length !== current.length) {
          emit(subnet6Change("deleted", bridge, current));
          emit(subnet6Change("created", bridge, row));
        } else {
          emit(subnet6Change("updated", bridge, row));
        }
        return subnet6Message(row);
      });
    },

    async DeleteDhcpV6Subnet(req: { bridgeId: string; subnetAddr: string }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const s = await findSubnet6(q, b, req.subnetAddr, true);
        await q.query("DELETE FROM dhcp6_subnets WHERE id = $1", [s.id]);
        emit(subnet6Change("deleted", bridge, s));
        return {};
      });
    },

    async ListDhcpV6Hosts(req: { bridgeId: string; subnetAddr: string }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      await findSubnet6(store.pool, b, req.subnetAddr);
      return { items: [] };
    },
  };
}

function checkInside(ip: string, s: SubnetRow): void {
  if (!ipv4InSubnet(ip, s.prefix, s.length)) {
    throw ApiError.invalid([{ property: "ipAddr", message: `must lie inside the subnet ${s.prefix}/${s.length}` }]);
  }
}

const hostMissing = (s: SubnetRow, mac: string) =>
  ApiError.notFound(`Subnet ${s.prefix}/${s.length} has no host with MAC address ${mac}.`);
