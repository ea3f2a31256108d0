import { defineConfig } from "vitest/config";

/**
 * `npm run test:slow`: the `*.slow.test.ts` files, which `npm test` leaves out. Each moves hundreds
 * of megabytes or packs and installs the package, so they run one file at a time (two of them at
 * once on a 2-core machine only make both slower) with generous timeouts.
 */
export default defineConfig({
  test: {
    include: ["test/**/*.slow.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: "forks",
    fileParallelism: false,
  },
});
