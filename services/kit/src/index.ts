// What the kit offers the services, the gateway, the CLI and the tools, named; each module's other
// exports are the kit's own. The limiters (limits.ts: Redis and rate-limiter-flexible, some 130
// modules) are "@vnm/kit/limits", so only the parts that limit (the gateway, identity) load them.

export { announcedId, announcedIds, auditRoot, type Bus, type BusMessage, localBus, natsBus, streamNames } from "./bus.ts";
export { provisionRole, roleName, roleOf, type ServiceRole, serviceDatabaseUrl } from "./db-roles.ts";
export { CHANGE_EVENTS, type Change, type ChangeDrop, type ChangeEvent, type ChangeMessage, changeReader, type FeedChange, parseChangeSubject } from "./changes.ts";
export { loadConfig, optional, parseBool, parseNonNegativeInt, parsePort, parsePositiveInt } from "./config.ts";
export { type Migration, OUTBOX_MIGRATION, PG, pgCode, type Queryable } from "./db.ts";
export { ApiError, type Violation } from "./errors.ts";
export { createLogger, holdNotices, type Logger, notice, tellPerson, writeOut } from "./log.ts";
export { type GrpcPackage, loadGrpc, PROTO_DIR } from "./proto.ts";
export { CONTRACT_FILE, loadDescriptors } from "./descriptors.ts";
export { checkConditions } from "./conditions.ts";
export { etagMatches, etagOf } from "./etag.ts";
export { type AnyResource, mergeHandlers, Resource, ResourceSet } from "./resource.ts";
export { type CallContext, type Handlers, runService, type ServiceContext, type ServiceSpec, Store } from "./service.ts";
export { announceReady, DEFAULT_DRAIN_MS, onShutdown } from "./shutdown.ts";
export { canonicalIpv6, ipv4InSubnet, isIpv4, isUuid, MAC_PATTERN, parseMac } from "./validate.ts";
export { vxlanPortId } from "./ids.ts";
export { Tombstones } from "./tombstones.ts";
export { mirrorClearing, PolicyReferences, type PolicyNamed, type PolicyReferrer, type PolicyStored } from "./policy-refs.ts";
export { type Contract, loadContract } from "./contract.ts";
export { type Checked, type MessageName, TEXT_RULE_MESSAGE } from "./rules.ts";
export { isRecord, memberOf, messageOf, stringMember } from "./values.ts";
export { buildCatalog, EVERY_PART, loadCatalog, peersOf, writableFields, type Catalog, type FieldInfo, type KindInfo, type MessageInfo, type RootDocumentInfo, type ResourceInfo, type Route } from "./catalog.ts";
export {
  bearer,
  type Identity,
  type KeyRing,
  keyRing,
  MAX_TOKEN_SECONDS,
  partIdentity,
  partOf,
  ROLES,
  SERVICE_AUDIENCE,
  SERVICE_TOKEN_SECONDS,
  serviceTokenSource,
  strongestRole,
  tokenClaims,
  tokenVerifier,
  USER_AUDIENCE,
  verifyToken,
} from "./auth.ts";
export { AUTH_SERVICE, type Authority, type CallerCheck, callerCheck, type IdentityCall, jwksOf, remoteAuthority } from "./authority.ts";
export { revocations, type Revocations } from "./revocation.ts";
export { type CountedKind, countedKinds, parseLimits, QUOTA_CACHE_MS, QUOTA_SERVICE, USAGE_SERVICE } from "./quota.ts";
export { type Access, accessRules, coarseDenial, maySee } from "./tenancy.ts";
export { type References, references } from "./references.ts";
export { bind, compileLinks, itemPath, linkFields, parseTemplate, resolveLink, type Segment, templateShape } from "./paths.ts";
export { addressVariable, createUpstream, DRY_RUN_KEY, FILTER_KEY, IF_MATCH_KEY, IF_NONE_MATCH_KEY, type Upstream } from "./upstream.ts";
export { EMPTY_LISTS_KEY, emptyLists } from "./empty-lists.ts";
export { PATCH_KEY, type PatchPaths, patchPaths } from "./patch.ts";
export { natsCredentials, natsPasswordVariable } from "./repo.ts";
export { Metrics } from "./metrics.ts";
export { isJsonObject, jsonText, LosslessNumber, mergePatch, parseJson } from "./json.ts";
export { httpSpans, startTelemetry } from "./telemetry.ts";
export { reclaimPeriodSeconds, reclaimWhenQuiet } from "./memory.ts";
