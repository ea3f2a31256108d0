/**
 * After-test cleanup shared by the tests that start real process trees: cleanups run in reverse,
 * then every process whose command line carries one of the test's markers must be gone.
 */
import { afterEach, expect } from "vitest";
import { pidsWithMarker } from "./cliHarness.js";
import { killAll } from "./processes.js";

/**
 * Registers an `afterEach` that runs the `cleanups` pushed during a test (last first), then fails
 * the test if a process carrying one of its `markers` is still alive (and kills it).
 */
export function cleanUpMarkedProcesses(): { cleanups: (() => Promise<void>)[]; markers: string[] } {
  const cleanups: (() => Promise<void>)[] = [];
  const markers: string[] = [];
  afterEach(async () => {
    await Promise.allSettled(
      cleanups
        .splice(0)
        .reverse()
        .map((c) => c()),
    );
    const left = markers.splice(0).flatMap(pidsWithMarker);
    killAll(left);
    expect(left, "processes left behind").toEqual([]);
  });
  return { cleanups, markers };
}
