/**
 * The temporary folder most test files need: a fresh directory under os.tmpdir() made before each
 * test (or once for the file), removed after it whatever the test left in it, and a marker derived
 * from its name that the test puts on the command lines of the processes it starts, so that it can
 * prove afterwards that none is left (`pidsWithMarker`).
 *
 * Call {@link useTempDir} before the file's own hooks: vitest runs "before" hooks in the order they
 * were registered and "after" hooks in reverse, so the folder exists when the test's own set-up
 * runs and is removed only after the test's own clean-up (which may still write to it or stop
 * processes that use it).
 */
import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";

/** Options of {@link useTempDir}. */
export interface TempDirOptions {
  /** Start of the folder's name, to recognise it in /tmp. Default "abridge-test-". */
  prefix?: string;
  /** "each" (default): a new folder per test; "all": one folder for every test of the file or describe block. */
  scope?: "each" | "all";
  /** Start of {@link TempDir.marker}, followed by "-" and the folder's name. Default "m". */
  marker?: string;
  /** Resolve symbolic links in the path (os.tmpdir() may be one), for tests that compare real paths. */
  realPath?: boolean;
}

/** The current folder, read in hooks and tests (throws outside them). */
export interface TempDir {
  /** The folder's absolute path. */
  readonly path: string;
  /** `<marker>-<folder name>`: unique to this folder, for command lines of the processes a test starts. */
  readonly marker: string;
}

/** Registers the hooks that make and remove the folder, and returns the accessor of the current one. */
export function useTempDir(options: TempDirOptions = {}): TempDir {
  const prefix = options.prefix ?? "abridge-test-";
  let current: string | undefined;
  const make = async (): Promise<void> => {
    const made = await mkdtemp(path.join(os.tmpdir(), prefix));
    current = options.realPath === true ? await realpath(made) : made;
  };
  const remove = async (): Promise<void> => {
    const dir = current;
    current = undefined;
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  };
  if (options.scope === "all") {
    beforeAll(make);
    afterAll(remove);
  } else {
    beforeEach(make);
    afterEach(remove);
  }
  const dir = (): string => {
    if (current === undefined) throw new Error(`no temp dir (${prefix}*) outside a test and its hooks`);
    return current;
  };
  return {
    get path() {
      return dir();
    },
    get marker() {
      return `${options.marker ?? "m"}-${path.basename(dir())}`;
    },
  };
}
