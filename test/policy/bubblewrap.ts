import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import type { Bridge } from "../../src/core/bridge.js";
import { findExecutable } from "../../src/upstream/process/sandbox.js";

/**
 * Whether this machine has bubblewrap. CI installs it, so the sandbox itself is always checked
 * there; on a machine without it, the same tests check the start-up error a user would get.
 */
export const HAVE_BWRAP = findExecutable("bwrap", process.env.PATH ?? "") !== undefined;

/** The checkout: the fixtures, tsx and the SDK the sandboxed fixtures load live here. */
const CHECKOUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Config lines of a sandboxed fixture server, showing `read` too. The checkout is shown read-only
 * over the sandbox's empty /tmp, so the tests pass from a clone under /tmp as from anywhere else.
 */
export function sandboxed(read: readonly string[] = []): string[] {
  return ['sandbox = "bwrap"', `sandbox_read = ${JSON.stringify([CHECKOUT, ...read])}`];
}

/**
 * Without bubblewrap: each of `sandboxed` failed to start, saying what to install, and none of
 * them runs unsandboxed (`others` lists the servers of the config that are not sandboxed).
 */
export function expectBwrapMissing(bridge: Bridge, sandboxed: readonly string[], others: readonly string[] = []): void {
  for (const name of sandboxed) {
    const status = bridge.servers().find((s) => s.name === name);
    expect(status).toMatchObject({ state: "failed", error: { code: "UPSTREAM_START_FAILED" } });
    expect(status?.error?.message).toMatch(/bwrap was not found on PATH; install bubblewrap \(Debian: apt-get install bubblewrap\)/);
  }
  for (const name of others) expect(bridge.servers().find((s) => s.name === name)?.state).toBe("ready");
  expect(bridge.childPids()).toHaveLength(others.length);
}
