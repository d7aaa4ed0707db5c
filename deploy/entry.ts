// The image's entry point: `node deploy/entry.js <gateway|domain> [--migrate-only]` starts the
// gateway or one domain service (compiled); `node deploy/entry.js --health` is the image's
// HEALTHCHECK: the gRPC health service of the process on GRPC_PORT when that is set (a domain
// service: SERVING while its database answers), else the gateway's /healthz on PORT.
import * as grpc from "@grpc/grpc-js";
import { loadGrpc, PROTO_DIR } from "@vnm/kit";

async function healthy(): Promise<boolean> {
  const { GRPC_PORT: grpcPort, PORT: port } = process.env;
  if (!grpcPort) {
    const r = await fetch(`http://127.0.0.1:${port || "8080"}/healthz`, { signal: AbortSignal.timeout(2_000) });
    return r.status === 200;
  }
  const Health = loadGrpc(PROTO_DIR).service("grpc.health.v1.Health");
  const client = new Health(`127.0.0.1:${grpcPort}`, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    (client as unknown as { Check: grpc.requestCallback<unknown> & ((...a: unknown[]) => void) }).Check(
      { service: "" },
      { deadline: Date.now() + 2_000 },
      (err: Error | null, res?: { status?: string }) => {
        client.close();
        resolve(!err && res?.status === "SERVING");
      },
    );
  });
}

const role = process.argv[2];
if (role === "--health") {
  process.exit((await healthy().catch(() => false)) ? 0 : 1);
} else if (role === "gateway") {
  await import("../gateway/src/main.ts");
} else if (role && /^[a-z]+$/.test(role)) {
  await import(`../services/${role}/src/main.ts`);
} else {
  process.stderr.write("usage: entry <gateway|bridge|identity|lb|...> [--migrate-only] | --health\n");
  process.exit(2);
}
