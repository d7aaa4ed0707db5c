// The three kinds of the interface's load balancing: what a client may send, how it is stored
// and how it reads back. Rules: lbMethod only ROUND_ROBIN, protocol and health monitor type
// only TCP, monitor timings non-negative 32-bit integers.
import { int, Resource, uuid } from "@vnm/kit";
import { z } from "zod";

/** A string field with one supported value; anything else is a 400 naming that value. */
const only = (value: string) => z.literal(value, { error: `must be ${value}, the only supported value` });

const seconds = () => int(0, 2 ** 31 - 1).optional();

interface LoadBalancerRow {
  id: string;
  admin_state_up: boolean;
  router_id: string | null;
}

export const loadBalancers = new Resource({
  kind: "LoadBalancer",
  table: "load_balancers",
  path: "/load_balancers",
  input: z.object({ id: uuid().optional(), adminStateUp: z.boolean().optional() }),
  // routerId is read-only: set from the router side, which this interface does not serve.
  columns: (b) => ({ admin_state_up: b.adminStateUp ?? true }),
  message: (r: LoadBalancerRow) => ({ id: r.id, adminStateUp: r.admin_state_up, routerId: r.router_id }),
});

interface PoolRow {
  id: string;
  load_balancer_id: string;
  lb_method: string;
  protocol: string;
  admin_state_up: boolean;
  health_monitor_id: string | null;
  status: string;
}

export const pools = new Resource({
  kind: "Pool",
  table: "pools",
  path: "/pools",
  input: z.object({
    id: uuid().optional(),
    loadBalancerId: uuid(),
    lbMethod: only("ROUND_ROBIN"),
    protocol: only("TCP").optional(),
    adminStateUp: z.boolean().optional(),
    healthMonitorId: uuid().optional(),
  }),
  // status is the service's: ACTIVE at creation (the column default), kept by PUT.
  columns: (b) => ({
    load_balancer_id: b.loadBalancerId,
    lb_method: b.lbMethod,
    protocol: b.protocol ?? "TCP",
    admin_state_up: b.adminStateUp ?? true,
    health_monitor_id: b.healthMonitorId ?? null,
  }),
  message: (r: PoolRow) => ({
    id: r.id,
    loadBalancerId: r.load_balancer_id,
    lbMethod: r.lb_method,
    protocol: r.protocol,
    adminStateUp: r.admin_state_up,
    healthMonitorId: r.health_monitor_id,
    status: r.status,
  }),
});

interface HealthMonitorRow {
  id: string;
  type: string;
  admin_state_up: boolean;
  delay: number;
  max_retries: number;
  timeout: number;
}

export const healthMonitors = new Resource({
  kind: "HealthMonitor",
  table: "health_monitors",
  path: "/health_monitors",
  input: z.object({
    id: uuid().optional(),
    type: only("TCP"),
    adminStateUp: z.boolean().optional(),
    delay: seconds(),
    maxRetries: seconds(),
    timeout: seconds(),
  }),
  columns: (b) => ({
    type: b.type,
    admin_state_up: b.adminStateUp ?? true,
    delay: b.delay ?? 0,
    max_retries: b.maxRetries ?? 0,
    timeout: b.timeout ?? 0,
  }),
  message: (r: HealthMonitorRow) => ({
    id: r.id,
    type: r.type,
    adminStateUp: r.admin_state_up,
    delay: r.delay,
    maxRetries: r.max_retries,
    timeout: r.timeout,
  }),
});
