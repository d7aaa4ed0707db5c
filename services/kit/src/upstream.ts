// gRPC clients for the services, used by the gateway and by services calling each other: one
// long-lived channel per domain (round-robin over every address given), a deadline on every
// call, and the trailing metadata kept for the caller. A domain whose address is not given
// (its service not deployed, or not written yet) answers every call UNAVAILABLE, naming it.
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import { ApiError } from "./errors.ts";
import type { Metrics } from "./metrics.ts";
import type { GrpcPackage } from "./proto.ts";
import { addressVariable } from "./repo.ts";
import { traced, traceFields, tracing } from "./telemetry.ts";
import { memberOf, messageOf, stringMember } from "./values.ts";

/** Metadata key listing what a call changed, as "<domain>.<kind>:<event>" pairs, for the gateway's cache. */
export const CHANGED_KINDS_KEY = "vnm-changed-kinds";

export { addressVariable };

/** Metadata key carrying the request id from the gateway into the services. */
export const REQUEST_ID_KEY = "x-request-id";

/** Metadata key of a list call's filters: a JSON object of field name -> value (see Resource). */
export const FILTER_KEY = "vnm-filter";
/** Trailing metadata key saying a list call applied the filters it was given. */
export const FILTERED_KEY = "vnm-filtered";
/** Metadata key of a write's If-Match: the service checks it in the write's own transaction. */
export const IF_MATCH_KEY = "vnm-if-match";
/** Metadata key of a write's If-None-Match, checked there too. */
export const IF_NONE_MATCH_KEY = "vnm-if-none-match";
/**
 * Metadata key of a dry run (the API's `?dryRun=All`): the write's transaction runs every
 * statement and check, then rolls back (Store.tx); nothing is stored or announced.
 */
export const DRY_RUN_KEY = "vnm-dry-run";

export interface CallResult {
  response: Record<string, unknown>;
  /** "<kind>:<event>" of what the call changed. */
  changes: string[];
  /** Whether the service applied the filters the call carried (FILTER_KEY). */
  filtered: boolean;
}

export interface Upstream {
  /** `token` is the caller's bearer token, passed on for the service to verify. */
  /**
   * `requestId` travels in the call's metadata (x-request-id) into the service's logs and
   * changes; `extra` are further metadata entries (FILTER_KEY, IF_MATCH_KEY).
   */
  call(service: string, rpc: string, request: unknown, timeoutMs: number, token?: string, requestId?: string, extra?: Record<string, string>): Promise<CallResult>;
  health(domain: string, timeoutMs: number): Promise<boolean>;
  close(): void;
}

/** "host:port" or "ip:port,ip:port,..." -> a grpc-js target. */
export function grpcTarget(addresses: string): string {
  const list = addresses
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length === 1) return list[0]!.includes(":") && !list[0]!.startsWith("dns:") ? `dns:${list[0]}` : list[0]!;
  if (list.every((a) => /^\d+\.\d+\.\d+\.\d+:\d+$/.test(a))) return `ipv4:${list.join(",")}`;
  throw new Error(`several addresses must all be ipv4:port, got ${addresses}`);
}

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1_000,
  "grpc.keepalive_time_ms": 10_000,
  "grpc.keepalive_timeout_ms": 5_000,
  "grpc.keepalive_permit_without_calls": 1,
  // A DNS name is looked up again when a replica goes away (30 s apart at most by default): a
  // rolling upgrade's new replicas are then known within a second of the old ones leaving.
  "grpc.dns_min_time_between_resolutions_ms": 1_000,
  // Whole collections come back in one message; 4 MiB (the default) is about 25,000 bridges.
  "grpc.max_receive_message_length": 512 * 1024 * 1024,
  // No channelz: nothing here reads it, and it counts every call.
  "grpc.enable_channelz": 0,
};

/** Reads: the methods a second attempt cannot change anything with. */
const READ_METHOD = /^(Get|List)[A-Z]/;

/**
 * The channel options of a domain's services: round-robin over every address, and the reads of
 * each service (`defs`, by full name) tried up to three times on UNAVAILABLE (a replica stopping
 * or gone between the pick and the answer). Writes are never attempted twice; grpc-js still
 * retries any call transparently when it never left the client (its connection was refused or
 * told GOAWAY before the call was sent). Every client of a domain, its health check's included,
 * gets the same options, so they share its connections (grpc-js pools subchannels by options):
 * the health check sees a replica back as soon as the calls do.
 */
function domainChannelOptions(defs: Map<string, grpc.ServiceDefinition>): grpc.ChannelOptions {
  const name = [...defs].flatMap(([service, def]) =>
    Object.values(def)
      .map((m) => m.path.slice(m.path.lastIndexOf("/") + 1))
      .filter((m) => READ_METHOD.test(m))
      .map((method) => ({ service, method })),
  );
  const retryPolicy = { maxAttempts: 3, initialBackoff: "0.05s", maxBackoff: "0.5s", backoffMultiplier: 2, retryableStatusCodes: ["UNAVAILABLE"] };
  const methodConfig = name.length > 0 ? [{ name, retryPolicy }] : [];
  return { ...CHANNEL_OPTIONS, "grpc.service_config": JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }], methodConfig }) };
}

/**
 * grpc-js's words for a call that never reached the service: its stream refused (HTTP/2's
 * REFUSED_STREAM: the server took no step on it, as one that is stopping does with a stream that
 * raced its GOAWAY), or no connection to pick. grpc-js itself retries a refused stream once; a
 * write refused again, or picked in the moment a replica's connection turns over during a rolling
 * restart, failed here with a 503 though another replica was there.
 */
const NEVER_REACHED = /^(Stream refused by server|(round_robin: )?No connection established)/;
/** Waits before the attempts after the first of a call that never reached its service. */
const UNREACHED_RETRY_MS = [25, 100];

/** Whether a failed call is one that never reached its service (safe to make again, writes too). */
function neverReached(err: unknown): boolean {
  const details = stringMember(err, "details");
  return memberOf(err, "code") === grpc.status.UNAVAILABLE && details !== undefined && NEVER_REACHED.test(details);
}

/** A call's failure as grpc-js reports one (code, details, trailers), for ApiError.from. */
function callError(st: grpc.StatusObject): grpc.ServiceError {
  return Object.assign(new Error(`${st.code} ${grpc.status[st.code] ?? ""}: ${st.details}`), { code: st.code, details: st.details, metadata: st.metadata });
}

/** A service's client and its methods (the client's constructor's, kept rather than read back from it). */
interface Peer {
  client: grpc.Client;
  methods: grpc.ServiceDefinition;
}

/**
 * One unary call: the answer and the kinds the call changed (its trailers), or the call's error.
 * Made on the client's channel directly (what grpc-js's generated method does beneath its
 * interceptor layer, which this code never uses): that method also captures the caller's stack
 * on every call, for the message of one that fails, which an API error never shows.
 */
function unary(peer: Peer, rpc: string, request: unknown, timeoutMs: number, token?: string, requestId?: string, extra?: Record<string, string>): Promise<CallResult> {
  return new Promise((resolve, reject) => {
    const def = peer.methods[rpc];
    if (!def || def.requestStream || def.responseStream) return reject(new Error(`no unary RPC ${rpc}`));
    let response: Record<string, unknown> | undefined;
    let broken: grpc.StatusObject | undefined;
    const metadata = new grpc.Metadata();
    if (token) metadata.set("authorization", `Bearer ${token}`);
    if (requestId) metadata.set(REQUEST_ID_KEY, requestId);
    for (const [k, v] of Object.entries(extra ?? {})) metadata.set(k, v);
    if (tracing()) for (const [k, v] of Object.entries(traceFields())) metadata.set(k, v);
    const call = peer.client.getChannel().createCall(def.path, Date.now() + timeoutMs, undefined, null, undefined);
    call.start(metadata, {
      onReceiveMetadata: () => {},
      onReceiveMessage: (message: Buffer) => {
        try {
          response = def.responseDeserialize(message);
        } catch (err) {
          broken = { code: grpc.status.INTERNAL, details: `Response message parsing error: ${messageOf(err)}`, metadata: new grpc.Metadata() };
          call.cancelWithStatus(broken.code, broken.details);
        }
      },
      onReceiveStatus: (st: grpc.StatusObject) => {
        const status = broken ?? st;
        if (status.code !== grpc.status.OK) return reject(callError(status));
        if (!response) return reject(callError({ code: grpc.status.UNIMPLEMENTED, details: "No message received", metadata: st.metadata }));
        const changed = st.metadata.get(CHANGED_KINDS_KEY)[0];
        const changes = typeof changed === "string" && changed ? changed.split(",") : [];
        resolve({ response, changes, filtered: st.metadata.get(FILTERED_KEY)[0] === "1" });
      },
    });
    call.startRead();
    let bytes: Buffer;
    try {
      bytes = def.requestSerialize(request);
    } catch (err) {
      call.cancelWithStatus(grpc.status.INTERNAL, `Request message serialization failure: ${messageOf(err)}`);
      return;
    }
    call.sendMessageWithContext({}, bytes);
    call.halfClose();
  });
}

export function createUpstream(
  pkg: GrpcPackage,
  services: { name: string; domain: string }[],
  addressOf: (domain: string) => string | undefined,
  metrics?: Metrics,
): Upstream {
  const domainOf = new Map(services.map((s) => [s.name, s.domain]));
  // A domain's clients are made when it is first called (its proto package loaded then: a part
  // holds only the packages of the services it calls); a domain with no address has none.
  const domains = new Set(domainOf.values());
  const peers = new Map<string, { clients: Map<string, Peer>; health: Peer } | undefined>();
  let closed = false;
  const peersOf = (domain: string) => {
    if (closed || peers.has(domain)) return peers.get(domain);
    const address = addressOf(domain);
    let made: { clients: Map<string, Peer>; health: Peer } | undefined;
    if (address && domains.has(domain)) {
      const target = grpcTarget(address);
      const ctors = new Map(services.filter((s) => s.domain === domain).map((s) => [s.name, pkg.service(s.name)]));
      const options = domainChannelOptions(new Map([...ctors].map(([n, c]) => [n, c.service])));
      const clients = new Map([...ctors].map(([name, Ctor]) => [name, { client: new Ctor(target, grpc.credentials.createInsecure(), options), methods: Ctor.service }]));
      const H = pkg.service("grpc.health.v1.Health");
      made = { clients, health: { client: new H(target, grpc.credentials.createInsecure(), options), methods: H.service } };
    }
    peers.set(domain, made);
    return made;
  };

  return {
    async call(service, rpc, request, timeoutMs, token, requestId, extra) {
      const domain = domainOf.get(service) ?? service;
      const client = domainOf.has(service) ? peersOf(domain)?.clients.get(service) : undefined;
      if (!client) throw ApiError.unavailable(`The ${domain} service is not deployed here (${addressVariable(domain)} is not set)`);
      const end = metrics?.grpcClientDuration.startTimer({ service, method: rpc });
      try {
        const span = `${service}/${rpc}`;
        const deadline = Date.now() + timeoutMs;
        const attempt = async (): Promise<CallResult> => {
          for (let i = 0; ; i++) {
            try {
              return await unary(client, rpc, request, deadline - Date.now(), token, requestId, extra);
            } catch (err) {
              const wait = UNREACHED_RETRY_MS[i];
              if (wait === undefined || !neverReached(err) || Date.now() + wait >= deadline) throw err;
              await sleep(wait);
            }
          }
        };
        const result = await traced(span, "client", { "rpc.system": "grpc", "rpc.method": span }, attempt);
        metrics?.grpcClient.inc({ service, method: rpc, code: "OK" });
        return result;
      } catch (err) {
        const e = ApiError.from(err, domain);
        metrics?.grpcClient.inc({ service, method: rpc, code: grpc.status[e.code] ?? String(e.code) });
        throw e;
      } finally {
        end?.();
      }
    },
    async health(domain, timeoutMs) {
      const client = peersOf(domain)?.health;
      if (!client) return false;
      try {
        const r = await unary(client, "Check", { service: "" }, timeoutMs);
        return r.response["status"] === "SERVING";
      } catch {
        return false;
      }
    },
    close() {
      closed = true;
      for (const p of peers.values()) for (const c of p ? [...p.clients.values(), p.health] : []) c.client.close();
      peers.clear();
    },
  };
}
