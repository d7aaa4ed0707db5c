// `vnm quota set` and `vnm quota reset` (issue 54): the quota kind's generic update and delete
// under the names a quota's user looks for; `vnm quota get` is the generic get. The generic
// verbs stay.
import type { Command } from "commander";

export function addQuotaVerbs(program: Command): void {
  const quota = program.commands.find((c) => c.name() === "quota");
  quota?.commands.find((c) => c.name() === "update")?.alias("set");
  quota?.commands.find((c) => c.name() === "delete")?.alias("reset");
}
