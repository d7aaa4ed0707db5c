#!/usr/bin/env python3
"""Drives a running vnm API with MidoNet's own python client (python-midonetclient).

The client is not part of this repository: put its `src` folder on PYTHONPATH (the e2e spec
e2e/test/midonetclient.e2e.spec.ts does, from VNM_MIDONETCLIENT). It needs Debian's
python3-httplib2 and python3-webob.

    python3 e2e/midonetclient/drive.py <base uri> <admin user> <password> [<VTEP's OVSDB port>]

Builds a topology the way MidoNet's users do (two routers, their ports linked, routes, a bridge
and its ARP entries, a host in a tunnel zone with a port bound to it, ...), checks every answer,
then deletes it all in reverse order and checks it is gone. Prints one line per step and, last,
`RESULT calls=<n> checks=<n> ok`. Any failed check is an AssertionError (exit status 1).

Two things are not the client's own use, both said where they happen:
- media types: the client sends `vnd.org.midonet.` types; this API is the interface document's,
  whose types are `vnd.org.service.` (midonet-facts.md §0.1). The constants of the client's
  vendor_media_type module are rewritten once, before the rest of the client is imported.
- the login, when the API sets no `sessionId` cookie (see `login` below).
"""

import sys
import uuid

from midonetclient import vendor_media_type

for _name in dir(vendor_media_type):
    _value = getattr(vendor_media_type, _name)
    if isinstance(_value, str) and "vnd.org.midonet." in _value:
        setattr(vendor_media_type, _name, _value.replace("vnd.org.midonet.", "vnd.org.service."))

from midonetclient import api_lib, auth_lib  # noqa: E402
from midonetclient.api import MidonetApi  # noqa: E402
from webob import exc as http_exc  # noqa: E402

# The ARP table's types (topology.md §5): the client has no constant for them.
ARP_TYPE = "application/vnd.org.service.IP4Mac-v1+json"
ARP_LIST_TYPE = "application/vnd.org.service.collection.IP4Mac-v1+json"
CALLS = 0
CHECKS = 0
FINDINGS = []

_do_request = api_lib.do_request


def _counted(*args, **kwargs):
    """Every HTTP request the client makes goes through here: counted, nothing changed."""
    global CALLS
    CALLS += 1
    return _do_request(*args, **kwargs)


api_lib.do_request = _counted


def check(cond, what):
    global CHECKS
    CHECKS += 1
    if not cond:
        raise AssertionError(what)


def eq(actual, expected, what):
    check(actual == expected, "%s: expected %r, got %r" % (what, expected, actual))


def step(text):
    print("step:", text, flush=True)


def gone(fetch, what):
    """fetch() must now raise the client's 404."""
    try:
        fetch()
    except http_exc.HTTPNotFound:
        check(True, what)
        return
    raise AssertionError("%s: still there" % what)


def login(api):
    """The client's own login: it reads the token from the answer's `Set-Cookie: sessionId=<key>`,
    which the gateway sets for a client that is no browser (docs/security.md)."""
    api.auth.login()
    check(auth_lib._token, "the client's login gave a token")
    print("login: the client's own (Set-Cookie sessionId)", flush=True)


def drive(base, user, password, vtep_port):
    api = MidonetApi(base, user, password)
    login(api)
    tenant = "pmc-" + uuid.uuid4().hex[:8]
    drive_topology(api, tenant)
    drive_policy(api, tenant)
    drive_services(api, tenant, vtep_port)
    drive_vteps(api, tenant, vtep_port)


def drive_topology(api, tenant):

    step("routers")
    r1 = api.add_router().name("pmc-edge").tenant_id(tenant).create()
    r2 = api.add_router().name("pmc-core").tenant_id(tenant).create()
    for r, name in ((r1, "pmc-edge"), (r2, "pmc-core")):
        check(uuid.UUID(r.get_id()), "router id is a UUID")
        eq(r.get_name(), name, "router name")
        eq(r.get_tenant_id(), tenant, "router tenant")
        eq(api.get_router(r.get_id()).get_name(), name, "router read by id")
    listed = [r.get_id() for r in api.get_routers()]
    check(r1.get_id() in listed and r2.get_id() in listed, "both routers listed")
    r1.name("pmc-edge-1").update()
    eq(api.get_router(r1.get_id()).get_name(), "pmc-edge-1", "router renamed")

    step("router ports")
    p1 = r1.add_port().port_address("10.77.0.1").network_address("10.77.0.0").network_length(30).create()
    p2 = r2.add_port().port_address("10.77.0.2").network_address("10.77.0.0").network_length(30).create()
    p3 = r1.add_port().port_address("192.168.77.1").network_address("192.168.77.0").network_length(24) \
        .port_mac("02:00:c0:a8:4d:01").create()
    for p, r, addr in ((p1, r1, "10.77.0.1"), (p2, r2, "10.77.0.2"), (p3, r1, "192.168.77.1")):
        eq(p.get_type(), "Router", "port type")
        eq(p.get_device_id(), r.get_id(), "port's router")
        eq(p.get_port_address(), addr, "port address")
        check(p.get_peer_id() is None, "a new port is not linked")
    eq(p3.get_port_mac(), "02:00:c0:a8:4d:01", "port MAC as given")
    check(p1.get_port_mac(), "a port MAC is chosen when none is given")
    eq(sorted(p.get_id() for p in r1.get_ports()), sorted([p1.get_id(), p3.get_id()]), "router 1's ports")
    eq([p.get_id() for p in r2.get_ports()], [p2.get_id()], "router 2's ports")
    eq(api.get_port(p2.get_id()).get_network_length(), 30, "port read by id")

    step("link")
    p1.link(p2.get_id())
    eq(p1.get_peer_id(), p2.get_id(), "the linked port's peer")
    eq(api.get_port(p2.get_id()).get_peer_id(), p1.get_id(), "the peer's peer")
    eq([p.get_id() for p in r1.get_peer_ports()], [p2.get_id()], "router 1's peer ports")
    eq([p.get_id() for p in r2.get_peer_ports()], [p1.get_id()], "router 2's peer ports")

    step("routes")
    default = r1.add_route().type("Normal").src_network_addr("0.0.0.0").src_network_length(0) \
        .dst_network_addr("0.0.0.0").dst_network_length(0).next_hop_port(p1.get_id()) \
        .next_hop_gateway("10.77.0.2").weight(100).create()
    local = r1.add_route().type("Normal").src_network_addr("0.0.0.0").src_network_length(0) \
        .dst_network_addr("192.168.78.0").dst_network_length(24).next_hop_port(p3.get_id()) \
        .next_hop_gateway("192.168.77.254").weight(10).create()
    back = r2.add_route().type("Normal").src_network_addr("0.0.0.0").src_network_length(0) \
        .dst_network_addr("192.168.77.0").dst_network_length(24).next_hop_port(p2.get_id()) \
        .next_hop_gateway("10.77.0.1").weight(100).create()
    eq(default.get_router_id(), r1.get_id(), "route's router")
    eq(default.get_next_hop_gateway(), "10.77.0.2", "route's gateway")
    eq(default.get_next_hop_port(), p1.get_id(), "route's port")
    eq(default.get_weight(), 100, "route's weight")
    eq(local.get_dst_network_addr(), "192.168.78.0", "route's destination")
    eq(local.get_dst_network_length(), 24, "route's destination length")
    eq(api.get_route(back.get_id()).get_router_id(), r2.get_id(), "route read by id")
    r1_routes = {r.get_id(): r for r in r1.get_routes()}
    check(default.get_id() in r1_routes and local.get_id() in r1_routes, "router 1 lists its routes")
    check(back.get_id() not in r1_routes, "router 1 does not list router 2's route")
    check(back.get_id() in [r.get_id() for r in r2.get_routes()], "router 2 lists its route")

    step("bridge, its port linked to a router, ARP entries (plain HTTP: the client has no call)")
    br = api.add_bridge().name("pmc-lan").tenant_id(tenant).create()
    eq(api.get_bridge(br.get_id()).get_name(), "pmc-lan", "bridge read by id")
    bp = br.add_port().create()
    eq(bp.get_type(), "Bridge", "bridge port type")
    eq(bp.get_device_id(), br.get_id(), "bridge port's bridge")
    rp = r2.add_port().port_address("172.16.77.1").network_address("172.16.77.0").network_length(24).create()
    bp.link(rp.get_id())
    eq(bp.get_peer_id(), rp.get_id(), "bridge port linked to a router port")
    eq([p.get_id() for p in br.get_peer_ports()], [rp.get_id()], "the bridge's peer ports")
    arp = br.dto["arpTable"]
    entries = [("172.16.77.10", "02:00:ac:10:4d:0a"), ("172.16.77.11", "02:00:ac:10:4d:0b")]
    arp_uris = []
    for ip, mac in entries:
        resp, _ = api.auth.do_request(arp, "POST", body={"ip": ip, "mac": mac},
                                      headers={"Content-Type": ARP_TYPE})
        eq(resp.status, 201, "ARP entry created")
        eq(resp["location"], "%s/%s_%s" % (arp, ip, mac.replace(":", "-")), "ARP entry's Location")
        arp_uris.append(resp["location"])
    _, listed = api.auth.do_request(arp, "GET", headers={"Accept": ARP_LIST_TYPE})
    eq(sorted((e["ip"], e["mac"]) for e in listed), entries, "ARP entries listed")
    _, one = api.auth.do_request(arp_uris[0], "GET", headers={"Accept": ARP_TYPE})
    eq((one["ip"], one["mac"], one["uri"]), entries[0] + (arp_uris[0],), "ARP entry read")

    step("host, tunnel zone, membership, binding")
    host = api.add_host().name("pmc-host-" + tenant).create()
    check(uuid.UUID(host.get_id()), "host id")
    eq(api.get_host(host.get_id()).get_name(), "pmc-host-" + tenant, "host read by id")
    check(host.get_id() in [h.get_id() for h in api.get_hosts()], "host listed")
    zone = api.add_vxlan_tunnel_zone().name("pmc-zone-" + tenant).create()
    eq(zone.get_type(), "vxlan", "zone type")
    eq(api.get_tunnel_zone(zone.get_id()).get_name(), "pmc-zone-" + tenant, "zone read by id")
    member = zone.add_tunnel_zone_host().host_id(host.get_id()).ip_address("10.99.0.7").create()
    eq(member.get_host_id(), host.get_id(), "zone member's host")
    eq(member.get_tunnel_zone_id(), zone.get_id(), "zone member's zone")
    eq(member.get_ip_address(), "10.99.0.7", "zone member's address")
    eq([(m.get_host_id(), m.get_ip_address()) for m in zone.get_hosts()], [(host.get_id(), "10.99.0.7")], "zone lists its host")
    gre = api.add_gre_tunnel_zone().name("pmc-gre-" + tenant).create()
    gre_member = gre.add_tunnel_zone_host().host_id(host.get_id()).ip_address("10.98.0.7").create()
    eq(gre_member.get_tunnel_zone_id(), gre.get_id(), "GRE zone member (GreTunnelZoneHost-v1)")
    eq([m.get_host_id() for m in gre.get_hosts()], [host.get_id()], "GRE zone lists its host")
    binding = host.add_host_interface_port().port_id(p3.get_id()).interface_name("tap-pmc0").create()
    eq(binding.get_host_id(), host.get_id(), "binding's host")
    eq(binding.get_port_id(), p3.get_id(), "binding's port")
    eq(binding.get_interface_name(), "tap-pmc0", "binding's interface")
    bound = api.get_port(p3.get_id())
    eq(bound.get_host_id(), host.get_id(), "the port shows its host")
    eq(bound.get_interface_name(), "tap-pmc0", "the port shows its interface")
    eq([(b.get_port_id(), b.get_interface_name()) for b in host.get_ports()], [(p3.get_id(), "tap-pmc0")], "the host lists its binding")

    step("cleanup, in reverse order")
    binding.delete()
    eq(list(host.get_ports()), [], "binding gone")
    check(api.get_port(p3.get_id()).get_host_id() is None, "the port is unbound")
    gre_member.delete()
    gre.delete()
    member.delete()
    eq(list(zone.get_hosts()), [], "zone member gone")
    zone.delete()
    gone(lambda: api.get_tunnel_zone(zone.get_id()), "zone gone")
    host.delete()
    gone(lambda: api.get_host(host.get_id()), "host gone")
    for u in reversed(arp_uris):
        resp, _ = api.auth.do_request(u, "DELETE")
        eq(resp.status, 204, "ARP entry deleted")
    _, listed = api.auth.do_request(arp, "GET", headers={"Accept": ARP_LIST_TYPE})
    eq(listed, [], "ARP table empty")
    bp.unlink()
    check(bp.get_peer_id() is None, "bridge port unlinked")
    bp.delete()
    rp.delete()
    br.delete()
    gone(lambda: api.get_bridge(br.get_id()), "bridge gone")
    for route in (back, local, default):
        route.delete()
        gone(lambda: api.get_route(route.get_id()), "route gone")
    left = [r.get_id() for r in list(r1.get_routes()) + list(r2.get_routes())]
    check(not {default.get_id(), local.get_id(), back.get_id()} & set(left), "the routes no longer listed")
    p1.unlink()
    check(p1.get_peer_id() is None, "port unlinked")
    check(api.get_port(p2.get_id()).get_peer_id() is None, "its peer unlinked")
    for p in (p3, p2, p1):
        p.delete()
        gone(lambda: api.get_port(p.get_id()), "port gone")
    for r in (r2, r1):
        r.delete()
        gone(lambda: api.get_router(r.get_id()), "router gone")
    remaining = [r.get_id() for r in api.get_routers()]
    check(r1.get_id() not in remaining and r2.get_id() not in remaining, "routers no longer listed")


def drive_policy(api, tenant):
    """Issue 52: chains, rules of every type in position order, a jump, filters on a bridge and a
    router port, a mirror to a port; deleting a chain takes the jumps into it and clears filters."""

    step("chains")
    chain = api.add_chain().name("pmc-in").tenant_id(tenant).create()
    target = api.add_chain().name("pmc-target").tenant_id(tenant).create()
    eq((chain.get_name(), chain.get_tenant_id()), ("pmc-in", tenant), "chain as given")
    eq(api.get_chain(chain.get_id()).get_name(), "pmc-in", "chain read by id")
    # The client's query strings need python 2's urllib.urlencode: the whole list is read instead.
    listed = [c.get_id() for c in api.get_chains() if c.get_tenant_id() == tenant]
    eq(sorted(listed), sorted([chain.get_id(), target.get_id()]), "the tenant's chains listed")

    step("rules of every type, appended in order")
    port_br = api.add_bridge().name("pmc-policy-bridge").tenant_id(tenant).create()
    mirror_port = port_br.add_port().create()
    made = []

    def add(kind, **fields):
        r = chain.add_rule().type(kind).position(len(made) + 1)
        for name, value in fields.items():
            getattr(r, name)(value)
        made.append(r.create())
        return made[-1]

    accept = add("accept", nw_src_address="10.20.0.0", nw_src_length=16, nw_proto=6,
                 tp_dst={"start": 22, "end": 22}, inv_nw_src=True)
    drop = add("drop", dl_src="02:AA:bb:cc:dd:01", dl_src_mask="ffff.ffff.0000", cond_invert=True)
    add("reject", nw_dst_address="192.0.2.0", nw_dst_length=24)
    add("return", match_return_flow=True)
    jump = add("jump", jump_chain_id=target.get_id(), jump_chain_name="pmc-target")
    dnat = add("dnat", flow_action="accept",
               nat_targets=[{"addressFrom": "10.30.0.5", "addressTo": "10.30.0.5", "portFrom": 0, "portTo": 0}])
    add("snat", flow_action="continue",
        nat_targets=[{"addressFrom": "198.51.100.1", "addressTo": "198.51.100.9", "portFrom": 1024, "portTo": 65535}])
    add("rev_dnat", flow_action="accept")
    add("rev_snat", flow_action="return")
    add("l2_transform", flow_action="redirect", target_port=mirror_port.get_id(), push_vlan=100, ingress=True, fail_open=False)
    add("trace", trace_request_id=str(uuid.uuid4()))
    types = ["accept", "drop", "reject", "return", "jump", "dnat", "snat", "rev_dnat", "rev_snat", "l2_transform", "trace"]
    rules = list(chain.get_rules())
    eq([r.get_type() for r in rules], types, "the chain lists its rules in position order")
    eq([r.get_position() for r in rules], list(range(1, len(types) + 1)), "positions 1..n")
    eq(accept.get_chain_id(), chain.get_id(), "rule's chain")
    eq((accept.dto["nwSrcAddress"], accept.dto["tpDst"], accept.dto["invNwSrc"]), ("10.20.0.0", {"start": 22, "end": 22}, True), "accept's conditions")
    eq(accept.dto["fragmentPolicy"], "header", "a port range makes the fragment policy header")
    eq(drop.dto["dlSrc"], "02:aa:bb:cc:dd:01", "a MAC comes back in lower case")
    eq(jump.get_jump_chain_id(), target.get_id(), "jump's chain")
    eq(dnat.get_nat_targets()[0]["addressTo"], "10.30.0.5", "dnat's target")
    eq(dnat.dto["fragmentPolicy"], "any", "a floating-IP dnat's fragment policy is any")
    eq(api.get_rule(jump.get_id()).get_position(), 5, "a rule read by id knows its position")

    step("a rule inserted first, one deleted: positions close up")
    first = chain.add_rule().type("drop").position(1).nw_proto(17).create()
    eq(first.get_position(), 1, "inserted at 1")
    eq(api.get_rule(accept.get_id()).get_position(), 2, "the others moved down")
    drop.delete()
    gone(lambda: api.get_rule(drop.get_id()), "rule gone")
    rules = list(chain.get_rules())
    eq([r.get_position() for r in rules], list(range(1, len(rules) + 1)), "no gap after a delete")
    try:
        chain.add_rule().type("accept").position(len(rules) + 2).create()
        raise AssertionError("a position past the end was accepted")
    except http_exc.HTTPBadRequest:
        check(True, "a position past n+1 is a 400")

    step("filters and a mirror on a bridge and a router port")
    router = api.add_router().name("pmc-policy-router").tenant_id(tenant).create()
    rport = router.add_port().port_address("10.66.0.1").network_address("10.66.0.0").network_length(24).create()
    mirror = api.add_mirror().to_port(mirror_port.get_id()).create()
    eq(mirror.get_to_port(), mirror_port.get_id(), "mirror's port")
    eq(api.get_mirror(mirror.get_id()).get_to_port(), mirror_port.get_id(), "mirror read by id")
    port_br.inbound_filter_id(chain.get_id()).outbound_filter_id(target.get_id()).update()
    eq(api.get_bridge(port_br.get_id()).get_inbound_filter_id(), chain.get_id(), "the bridge's inbound filter")
    port_br.dto["inboundMirrorIds"] = [mirror.get_id()]
    port_br.update()
    eq(api.get_bridge(port_br.get_id()).dto["inboundMirrorIds"], [mirror.get_id()], "the bridge's mirror")
    rport.inbound_filter_id(chain.get_id()).update()
    eq(api.get_port(rport.get_id()).get_inbound_filter_id(), chain.get_id(), "the router port's inbound filter")
    try:
        port_br.inbound_filter_id(str(uuid.uuid4())).update()
        raise AssertionError("a missing chain was accepted as a filter")
    except http_exc.HTTPNotFound:
        check(True, "a missing chain as a filter is a 404")
    port_br = api.get_bridge(port_br.get_id())
    eq(port_br.get_inbound_filter_id(), chain.get_id(), "a refused filter stored nothing")

    step("deleting the jump target takes the jump; deleting the chain clears the filters")
    target.delete()
    gone(lambda: api.get_chain(target.get_id()), "target chain gone")
    gone(lambda: api.get_rule(jump.get_id()), "the jump into it gone")
    rules = list(chain.get_rules())
    eq([r.get_position() for r in rules], list(range(1, len(rules) + 1)), "positions closed up after the jump went")
    wait_for("the bridge's outbound filter cleared", lambda: api.get_bridge(port_br.get_id()).get_outbound_filter_id() is None)
    chain.delete()
    gone(lambda: api.get_rule(accept.get_id()), "the chain's rules gone with it")
    wait_for("the bridge's inbound filter cleared", lambda: api.get_bridge(port_br.get_id()).get_inbound_filter_id() is None)
    wait_for("the port's inbound filter cleared", lambda: api.get_port(rport.get_id()).get_inbound_filter_id() is None)

    step("a mirror's port deleted takes the mirror")
    port_br = api.get_bridge(port_br.get_id())
    port_br.dto["inboundMirrorIds"] = []
    port_br.update()
    mirror_port.delete()
    wait_for("the mirror gone with its port", lambda: _missing(lambda: api.get_mirror(mirror.get_id())))
    rport.delete()
    router.delete()
    port_br.delete()


def wait_for(what, cond, seconds=15):
    """Polls cond() (each poll a client read) until it is true; changes that cross services are announced, not instant."""
    import time

    deadline = time.time() + seconds
    while True:
        if cond():
            check(True, what)
            return
        if time.time() > deadline:
            raise AssertionError("%s: not within %d s" % (what, seconds))
        time.sleep(0.2)


def drive_services(api, tenant, vtep_port):
    """Issue 52/53 kinds: a load balancer on a router with a pool, members and a VIP; a QoS policy
    and its rules; a VTEP binding when a device is given (vtep_port: its OVSDB port on 127.0.0.1)."""
    api._ensure_application()
    app = api.app  # MidonetApi has no QoS calls; its application object has (as the CLI uses it)

    step("load balancer, pool, members, VIP")
    router = api.add_router().name("pmc-lb-router").tenant_id(tenant).create()
    lb = api.add_load_balancer().create()
    check(uuid.UUID(lb.get_id()), "load balancer id")
    router.load_balancer_id(lb.get_id()).update()
    eq(router.get_load_balancer_id(), lb.get_id(), "the router names its load balancer")
    wait_for("the load balancer shows its router", lambda: api.get_load_balancer(lb.get_id()).get_router_id() == router.get_id())
    # conventions.md §3 (Pools): POST /load_balancers/:id/pools needs loadBalancerId in the body
    # too (the path's id is used); the client's lb.add_pool() does not set it, so its user does.
    pool = lb.add_pool().load_balancer_id(lb.get_id()).lb_method("ROUND_ROBIN").protocol("TCP").create()
    eq(pool.get_load_balancer_id(), lb.get_id(), "pool's load balancer (POSTed to the load balancer's pools)")
    eq([p.get_id() for p in lb.get_pools()], [pool.get_id()], "the load balancer lists its pool")
    m1 = pool.add_pool_member().address("10.55.0.11").protocol_port(8080).weight(3).create()
    m2 = api.add_pool_member().pool_id(pool.get_id()).address("10.55.0.12").protocol_port(8080).create()
    eq((m1.get_pool_id(), m1.get_address(), m1.get_protocol_port(), m1.get_weight()), (pool.get_id(), "10.55.0.11", 8080, 3), "member as given")
    eq(m2.get_weight(), 1, "member's default weight")
    eq(api.get_pool_member(m2.get_id()).get_address(), "10.55.0.12", "member read by id")
    eq(sorted(m.get_id() for m in pool.get_pool_members()), sorted([m1.get_id(), m2.get_id()]), "the pool lists its members")
    m1.weight(5).update()
    eq(api.get_pool_member(m1.get_id()).get_weight(), 5, "member's weight changed")
    vip = pool.add_vip().address("192.0.2.55").protocol_port(80).create()
    eq((vip.get_pool_id(), vip.get_address(), vip.get_protocol_port()), (pool.get_id(), "192.0.2.55", 80), "VIP as given")
    eq(vip.get_load_balancer_id(), lb.get_id(), "the VIP's load balancer is its pool's")
    eq([v.get_id() for v in pool.get_vips()], [vip.get_id()], "the pool lists its VIP")
    eq([v.get_id() for v in lb.get_vips()], [vip.get_id()], "the load balancer lists its VIP")
    eq(api.get_vip(vip.get_id()).get_address(), "192.0.2.55", "VIP read by id")

    step("QoS policy and rules")
    policy = app.add_qos_policy().name("pmc-qos").description("python client").shared(False).tenant_id(tenant).create()
    eq((policy.get_name(), policy.get_tenant_id()), ("pmc-qos", tenant), "QoS policy as given")
    eq(app.get_qos_policy(policy.get_id()).get_description(), "python client", "QoS policy read by id")
    bw = policy.add_bw_limit_rule().max_kbps(1000).max_burst_kb(100).create()
    dscp = policy.add_dscp_rule().dscp_mark(26).create()
    eq((bw.get_policy_id(), bw.get_max_kbps(), bw.get_max_burst_kb()), (policy.get_id(), 1000, 100), "bandwidth rule as given")
    eq((dscp.get_policy_id(), dscp.get_dscp_mark()), (policy.get_id(), 26), "DSCP rule as given")
    eq([r.get_id() for r in policy.get_bw_limit_rules()], [bw.get_id()], "the policy lists its bandwidth rule")
    eq([r.get_id() for r in policy.get_dscp_rules()], [dscp.get_id()], "the policy lists its DSCP rule")
    bw.max_kbps(2000).update()
    eq(bw.get_max_kbps(), 2000, "bandwidth rule changed")
    # A port's qosPolicyId is not served (docs/api.md, ports: "Not served yet"): not driven here.
    port_br = api.add_bridge().name("pmc-vtep-bridge").tenant_id(tenant).create()

    binding = None
    vtep = vzone = None
    if vtep_port:
        step("VTEP and a binding (device at 127.0.0.1:%s)" % vtep_port)
        vzone = api.add_vtep_tunnel_zone().name("pmc-vtep-zone-" + tenant).create()
        vtep = api.add_vtep().management_ip("127.0.0.1").management_port(int(vtep_port)).tunnel_zone_id(vzone.get_id()).create()
        eq((vtep.get_management_ip(), vtep.get_management_port()), ("127.0.0.1", int(vtep_port)), "VTEP as given")
        wait_for("the device's port", lambda: [p.dto["name"] for p in api.get_vtep(vtep.get_id()).get_ports()] == ["eth0"])
        binding = vtep.add_binding().port_name("eth0").vlan_id(17).network_id(port_br.get_id()).create()
        eq((binding.get_port_name(), binding.get_vlan_id(), binding.get_network_id()), ("eth0", 17, port_br.get_id()), "binding as given")
        eq([(b.get_port_name(), b.get_vlan_id()) for b in vtep.get_bindings()], [("eth0", 17)], "the VTEP lists its binding")

    step("cleanup of the services' kinds, in reverse order")
    if binding is not None:
        binding.delete()
        eq(list(vtep.get_bindings()), [], "binding gone")
        vtep.delete()
        gone(lambda: api.get_vtep(vtep.get_id()), "VTEP gone")
        vzone.delete()
    wait_for("bridge deletable", lambda: _try_delete(port_br))
    dscp.delete()
    bw.delete()
    eq(list(policy.get_bw_limit_rules()) + list(policy.get_dscp_rules()), [], "rules gone")
    policy.delete()
    gone(lambda: app.get_qos_policy(policy.get_id()), "QoS policy gone")
    vip.delete()
    gone(lambda: api.get_vip(vip.get_id()), "VIP gone")
    for m in (m2, m1):
        m.delete()
        gone(lambda: api.get_pool_member(m.get_id()), "member gone")
    pool.delete()
    gone(lambda: api.get_pool(pool.get_id()), "pool gone")
    router.load_balancer_id(None).update()
    wait_for("the load balancer shows no router", lambda: api.get_load_balancer(lb.get_id()).get_router_id() is None)
    lb.delete()
    gone(lambda: api.get_load_balancer(lb.get_id()), "load balancer gone")
    router.delete()


def _missing(fetch):
    """Whether fetch() raises the client's 404."""
    try:
        fetch()
        return False
    except http_exc.HTTPNotFound:
        return True


def _try_delete(item):
    """A bridge's delete is a 409 while it still has a VXLAN port (removed shortly after its last binding)."""
    try:
        item.delete()
        return True
    except http_exc.HTTPConflict:
        return False


def refused(call, error, what):
    """call() must raise the client's error for that status (an HTTPConflict, an HTTPNotFound)."""
    try:
        call()
    except error:
        check(True, what)
        return
    raise AssertionError("%s: not refused with %s" % (what, error.__name__))


def drive_vteps(api, tenant, vtep_port):
    """Issue 53 through the client's VTEP calls (vtep-bindings.md), when a device is given: a VTEP
    listed and read; its device's port listed and read again at its uri (VTEPPort-v1); bindings
    of two bridges added, read at their uri, listed, a taken pair and a port the device lacks
    refused; each bridge's VXLAN port (read from the bridge, which the client has no getter for,
    and at /ports); the deletes that bindings block; all unbound and deleted."""
    if not vtep_port:
        return
    from midonetclient.vtep_binding import VtepBinding
    from midonetclient.vtep_port import VtepPort

    step("VTEP read and listed, its device's ports read by their uri")
    vzone = api.add_vtep_tunnel_zone().name("pmc-vteps-" + tenant).create()
    vtep = api.add_vtep().management_ip("127.0.0.1").management_port(int(vtep_port)).tunnel_zone_id(vzone.get_id()).create()
    check(uuid.UUID(vtep.get_id()), "VTEP id")
    eq(vtep.get_tunnel_zone_id(), vzone.get_id(), "VTEP's tunnel zone")
    check(vtep.get_id() in [v.get_id() for v in api.get_vteps()], "the VTEP listed")
    wait_for("the VTEP connected", lambda: api.get_vtep(vtep.get_id()).get_connection_state() == "connected")
    vtep = api.get_vtep(vtep.get_id())
    ports = list(vtep.get_ports())
    eq([p.get_name() for p in ports], ["eth0"], "the device's ports")
    port = ports[0]
    eq((port.dto.get("uri"), port.dto.get("vtep")), (vtep.get_uri() + "/ports/eth0", vtep.get_uri()), "the port's uri and vtep")
    port.get()
    eq((port.get_name(), port.get_description(), port.dto.get("vtep")), ("eth0", "", vtep.get_uri()), "the port read at its uri")
    refused(lambda: VtepPort(None, {"uri": vtep.get_uri() + "/ports/eth9"}, api.auth).get(), http_exc.HTTPNotFound, "a port the device lacks")

    step("bindings of two bridges: added, read, listed; a taken pair and an unknown port refused")
    a = api.add_bridge().name("pmc-vtep-a").tenant_id(tenant).create()
    b = api.add_bridge().name("pmc-vtep-b").tenant_id(tenant).create()
    made = []
    for bridge, vlan in ((a, 21), (a, 22), (b, 23)):
        binding = vtep.add_binding().port_name("eth0").vlan_id(vlan).network_id(bridge.get_id()).create()
        eq(binding.dto.get("uri"), "%s/bindings/eth0/%d" % (vtep.get_uri(), vlan), "binding's uri")
        made.append(binding)
    b21, b22, b23 = made
    b21.get()
    eq((b21.get_port_name(), b21.get_vlan_id(), b21.get_network_id(), b21.dto.get("vtepId")), ("eth0", 21, a.get_id(), vtep.get_id()), "binding read at its uri")
    eq(sorted((x.get_vlan_id(), x.get_network_id()) for x in vtep.get_bindings()), [(21, a.get_id()), (22, a.get_id()), (23, b.get_id())], "the VTEP lists its bindings")
    refused(lambda: vtep.add_binding().port_name("eth0").vlan_id(21).network_id(b.get_id()).create(), http_exc.HTTPConflict, "a port and VLAN bound twice")
    refused(lambda: vtep.add_binding().port_name("eth9").vlan_id(24).network_id(b.get_id()).create(), http_exc.HTTPNotFound, "a port the device lacks, bound")
    eq(len(list(vtep.get_bindings())), 3, "nothing bound by the refused POSTs")

    step("one VXLAN port per bridge and VTEP; the deletes that bindings block")
    vxlan = {}
    for bridge in (a, b):
        wait_for("the bridge's VXLAN port", lambda: len(api.get_bridge(bridge.get_id()).dto.get("vxlanPortIds") or []) == 1)
        [pid] = api.get_bridge(bridge.get_id()).dto["vxlanPortIds"]
        p = api.get_port(pid)
        eq((p.get_type(), p.get_device_id(), p.dto.get("vtepId")), ("Vxlan", bridge.get_id(), vtep.get_id()), "the VXLAN port")
        vxlan[bridge.get_id()] = pid
    check(vxlan[a.get_id()] != vxlan[b.get_id()], "each bridge its own VXLAN port")
    refused(lambda: api.get_port(vxlan[a.get_id()]).delete(), http_exc.HTTPConflict, "a VXLAN port's DELETE")
    refused(lambda: vtep.delete(), http_exc.HTTPConflict, "a VTEP with bindings")
    refused(lambda: b.delete(), http_exc.HTTPConflict, "a bridge with a VXLAN port")

    step("unbound: the VXLAN port goes with a bridge's last binding; then the VTEP, its zone and the bridges")
    b22.delete()
    eq(api.get_bridge(a.get_id()).dto.get("vxlanPortIds"), [vxlan[a.get_id()]], "a bridge keeps its VXLAN port while bound")
    b21.delete()
    refused(lambda: VtepBinding(None, {"uri": b21.dto["uri"]}, api.auth).get(), http_exc.HTTPNotFound, "an unbound pair")
    wait_for("its VXLAN port gone", lambda: api.get_bridge(a.get_id()).dto.get("vxlanPortIds") == [])
    gone(lambda: api.get_port(vxlan[a.get_id()]), "the VXLAN port gone")
    b23.delete()
    eq(list(vtep.get_bindings()), [], "no binding left")
    api.delete_vtep(vtep.get_id())
    gone(lambda: api.get_vtep(vtep.get_id()), "VTEP gone")
    vzone.delete()
    for bridge in (a, b):
        wait_for("bridge deletable", lambda: _try_delete(bridge))


def main(argv):
    if len(argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    base, user, password = argv[1].rstrip("/"), argv[2], argv[3]
    drive(base, user, password, argv[4] if len(argv) == 5 else None)
    for f in FINDINGS:
        print("FINDING", f, flush=True)
    print("RESULT calls=%d checks=%d ok" % (CALLS, CHECKS), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
