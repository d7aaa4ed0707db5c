// What the kit offers the services, the gateway, the CLI and the tools, named; each module's other
// exports are the kit's own.

export { auditRoot, type Bus, type BusMessage, localBus, natsBus, streamNames } from "./bus.ts";
export { type Change, type ChangeMessage, parseChangeSubject } from "./changes.ts";
export { loadConfig, optional, parseBool, parseNonNegativeInt, parsePort, parsePositiveInt } from "./config.ts";
export { type Migration, PG, pgCode, type Queryable } from "./db.ts";
export { ApiError, type Violation } from "./errors.ts";
export { createLogger, holdNotices, type Logger, notice, writeOut } from "./log.ts";
export { clientConstructor, loadGrpc, loadReflection } from "./proto.ts";
export { type AnyResource, mergeHandlers, Resource, resourceOf } from "./resource.ts";
export { type CallContext, type Handlers, runService, type ServiceContext, type ServiceSpec, Store } from "./service.ts";
export { announceReady, DEFAULT_DRAIN_MS, onShutdown } from "./shutdown.ts";
export { canonicalIpv6, int, ipv4, ipv4InSubnet, ipv6, isIpv4, isUuid, mac, parseInput, parseMac, text, uuid } from "./validate.ts";
export { buildCatalog, catalog, writableFields, type Catalog, type FieldInfo, type KindInfo, type MessageInfo, type RootDocumentInfo, type ResourceInfo, type Route } from "./catalog.ts";
export { type Identity, ROLES, serviceToken, signToken, strongestRole, type TokenKeys, tokenVerifier } from "./auth.ts";
export { type Access, accessRules, coarseDenial } from "./tenancy.ts";
export { bind, compileLinks, itemPath, linkFields, parseTemplate, resolveLink, type Segment, templateShape } from "./paths.ts";
export { addressVariable, createUpstream, type Upstream } from "./upstream.ts";
export { Metrics } from "./metrics.ts";
export { httpSpans, startTelemetry } from "./telemetry.ts";
export { reclaimPeriodSeconds, reclaimWhenQuiet } from "./memory.ts";
