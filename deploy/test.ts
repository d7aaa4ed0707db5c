// The packages' typechecks and tests (npm test's last step), in two turbo runs side by side: the
// whole system's e2e package, by far the longest, from the first second, and every other package
// one at a time beside it. One turbo run with --concurrency=2 starts the e2e package whenever its
// scheduler reaches it (last, as often as not), which leaves the long pole alone at the end.
// Arguments go to both runs (`npm test -- --continue`). Exits with the first failing run's status.
import { spawn } from "node:child_process";

const E2E = "@vnm/e2e";
const args = process.argv.slice(2);

function turbo(filter: string): Promise<number> {
  const child = spawn("turbo", ["run", "typecheck", "test", `--filter=${filter}`, "--concurrency=1", ...args], { stdio: "inherit" });
  return new Promise((resolve) => {
    child.on("error", () => resolve(1));
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const codes = await Promise.all([turbo(E2E), turbo(`!${E2E}`)]);
process.exitCode = codes.find((c) => c !== 0) ?? 0;
