// npm start's embedded Postgres runs from one copy of the server binaries kept beside its data
// (as root, where the postgres user can reach them). The copy is made once and kept while its
// server runs; a copy whose server no longer runs (its libraries' links lost, as when it was
// made from a package whose links were never made) is made again instead of failing every start.
import { execFileSync } from "node:child_process";
import { lstatSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nativeDir, sharedBinaries } from "../../deploy/postgres.ts";

const root = mkdtempSync(join(tmpdir(), "vnm-pg-copy-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the embedded Postgres's copy of its binaries", () => {
  it("is kept while its server runs, and made again once it does not", async () => {
    const native = await nativeDir();
    const bin = sharedBinaries(native, root);
    const made = statSync(join(bin, "postgres")).ino;
    expect(sharedBinaries(native, root)).toBe(bin);
    expect(statSync(join(bin, "postgres")).ino).toBe(made);
    const lib = join(bin, "..", "lib");
    for (const f of readdirSync(lib)) if (lstatSync(join(lib, f)).isSymbolicLink()) rmSync(join(lib, f));
    expect(() => execFileSync(join(bin, "postgres"), ["--version"], { stdio: "ignore" })).toThrow();
    expect(sharedBinaries(native, root)).toBe(bin);
    expect(statSync(join(bin, "postgres")).ino).not.toBe(made);
    expect(execFileSync(join(bin, "postgres"), ["--version"], { encoding: "utf8" })).toMatch(/PostgreSQL\) 18/);
  });
});
