import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { build } from "esbuild";
import { bundleCli } from "../build/bundleCli.js";
import { REPO_ROOT } from "./corpus.js";
import { isMainModule } from "./standalone.js";

/**
 * Where the bench writes abridge and its fixtures as plain JavaScript. One folder below the
 * repository root, like `dist/`: `src/model/version.ts` reads `../../package.json` and the
 * summarizer reads `../../prompts/` relative to their own file, and `node_modules` resolves from
 * the repository. Git-ignored; rebuilt on every bench run.
 */
export const JS_BUILD_DIR = path.join(REPO_ROOT, ".bench-build");

/**
 * Where the bench writes the CLI bundle, made by the build step users get (build/bundleCli.ts):
 * `<dir>/cli/`, two levels below the root as `dist/cli/` is. Git-ignored; rebuilt on every bench run.
 */
export const JS_BUNDLE_DIR = path.join(REPO_ROOT, ".bench-bundle");

/** The built files a start-up measurement runs with `node` (no TypeScript loader in the figure). */
export interface BuiltJs {
  /** `abridge` itself as users run it: the CLI bundle's `bin.js` (build/bundleCli.ts). */
  cliBin: string;
  /** `abridge` built file by file (as tsc lays out `dist/`): the built `src/cli/bin.ts`, for comparison. */
  cliModulesBin: string;
  /** The built test/fixtures/echoServer.ts. */
  echoFixture: string;
  /** Wall time of the build. */
  buildMs: number;
}

async function typeScriptFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")).map((e) => path.join(e.parentPath, e.name));
}

/**
 * Transpiles `src/` (to {@link JS_BUILD_DIR}, laid out as `dist/` is) and the test fixtures (to
 * its `fixtures/`) file by file, unbundled, and bundles the CLI (to {@link JS_BUNDLE_DIR}) with
 * the package's own build step: the figures of `abridge` are those of the bundle users run, and the
 * file-by-file build stays beside it for the start-up comparison (bench/startupPeers.ts).
 */
export async function buildJs(): Promise<BuiltJs> {
  const start = performance.now();
  await rm(JS_BUILD_DIR, { recursive: true, force: true });
  const common = { bundle: false, format: "esm", platform: "node", target: "node20", sourcemap: false, logLevel: "error" } as const;
  await build({ ...common, entryPoints: await typeScriptFiles(path.join(REPO_ROOT, "src")), outdir: JS_BUILD_DIR, outbase: path.join(REPO_ROOT, "src") });
  const fixtures = path.join(REPO_ROOT, "test", "fixtures");
  await build({ ...common, entryPoints: await typeScriptFiles(fixtures), outdir: path.join(JS_BUILD_DIR, "fixtures"), outbase: fixtures });
  await rm(JS_BUNDLE_DIR, { recursive: true, force: true });
  const bundle = await bundleCli({ outdir: path.join(JS_BUNDLE_DIR, "cli") });
  return {
    cliBin: bundle.bin,
    cliModulesBin: path.join(JS_BUILD_DIR, "cli", "bin.js"),
    echoFixture: path.join(JS_BUILD_DIR, "fixtures", "echoServer.js"),
    buildMs: performance.now() - start,
  };
}

if (isMainModule(import.meta.url)) {
  const built = await buildJs();
  process.stdout.write(`${JSON.stringify(built)}\n`);
}
