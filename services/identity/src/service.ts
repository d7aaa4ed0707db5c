// The identity service: what it declares; main.ts runs it on its own, the launcher beside the others.
import { mergeHandlers, type ServiceSpec } from "@vnm/kit";
import { migrations } from "./migrations.ts";
import { identityParts, keyHandlers, localAuthority } from "./tokens.ts";
import { authHandlers, ensureAdmin, users } from "./users.ts";

const AUTH = "vnm.identity.v1.AuthService";

export const service: ServiceSpec = {
  domain: "identity",
  migrations,
  authority: localAuthority,
  onStart: async (svc) => {
    const parts = identityParts(svc);
    await parts.keys;
    await ensureAdmin(svc.store, svc.log, parts.config);
    return () => identityParts(svc).stop();
  },
  resources: [users],
  services: (svc) => mergeHandlers({ [AUTH]: authHandlers(svc) }, { [AUTH]: keyHandlers(svc) }),
};
