import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // `*.slow.test.ts` run with `npm run test:slow` (vitest.slow.config.ts): the tests that take
    // minutes on a loaded machine (hundreds of megabytes through a pipe, packing and installing).
    exclude: [...configDefaults.exclude, "test/**/*.slow.test.ts"],
    // End-to-end tests spawn real MCP servers and child processes; on a 2-core machine a cold
    // `npx`-free spawn of a published server takes a few seconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // vitest runs one file at a time on a 2-core machine by default (cores - 1). Most files wait
    // on child processes and sockets far more than they compute, so two at once roughly halves the
    // suite's time; the tests wait for events, so a busier machine only makes them slower.
    maxWorkers: 2,
  },
});
