// The vitest settings every package uses (its vitest.config.ts re-exports this).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Integration suites in test/, unit tests beside the code they test (no network).
    include: ["test/**/*.spec.ts", "src/**/*.spec.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    reporters: ["default", "json"],
    outputFile: { json: "test-results.json" },
  },
});
