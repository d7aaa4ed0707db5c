import { runService } from "@vnm/kit";
import { service } from "./service.ts";

await runService(service);
