// The identity service: what it declares; main.ts runs it on its own, the launcher beside the others.
import type { ServiceSpec } from "@vnm/kit";
import { migrations } from "./migrations.ts";
import { authHandlers, ensureAdmin, users } from "./users.ts";

export const service: ServiceSpec = {
  domain: "identity",
  migrations,
  onStart: ({ store, log }) => ensureAdmin(store, log),
  resources: [users],
  services: ({ store }) => ({ "vnm.identity.v1.AuthService": authHandlers(store) }),
};
