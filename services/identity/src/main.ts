import { runService } from "@vnm/kit";
import { migrations } from "./migrations.ts";
import { authHandlers, ensureAdmin, userHandlers } from "./users.ts";

await runService({
  domain: "identity",
  migrations,
  onStart: ensureAdmin,
  services: (store) => ({
    "vnm.identity.v1.UserService": userHandlers(store),
    "vnm.identity.v1.AuthService": authHandlers(store),
  }),
});
