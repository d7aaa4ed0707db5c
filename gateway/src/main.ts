import { startGateway } from "./index.ts";

await startGateway();
