import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // End-to-end tests spawn real MCP servers and child processes; on a 2-core machine a cold
    // `npx`-free spawn of a published server takes a few seconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
