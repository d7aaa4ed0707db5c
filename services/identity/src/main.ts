import { runService } from "@vnm/kit";
import { migrations } from "./migrations.ts";
import { authHandlers, ensureAdmin, users } from "./users.ts";

await runService({
  domain: "identity",
  migrations,
  onStart: ensureAdmin,
  resources: [users],
  services: (store) => ({ "vnm.identity.v1.AuthService": authHandlers(store) }),
});
