// Writes a client credential for every part (VNM_<PART>_CREDENTIAL) and the identity service's
// list of their hashes (VNM_SERVICE_CLIENTS), as an env file for docker compose:
//   node deploy/credentials.ts > .env
// Run it again (and restart) to replace them all.
import { serviceCredentials, serviceDomains } from "@vnm/kit/repo";

const parts = [...serviceDomains().filter((d) => d !== "identity"), "gateway"];
const { credentials, clients } = serviceCredentials(parts);
const lines = [...credentials].map(([part, credential]) => `VNM_${part.toUpperCase()}_CREDENTIAL=${credential}`);
process.stdout.write(`${[...lines, `VNM_SERVICE_CLIENTS=${clients}`].join("\n")}\n`);
