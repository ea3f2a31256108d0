import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { build } from "esbuild";
import { REPO_ROOT } from "./corpus.js";
import { isMainModule } from "./standalone.js";

/**
 * Where the bench writes abridge and its fixtures as plain JavaScript. One folder below the
 * repository root, like `dist/`: `src/model/version.ts` reads `../../package.json` and the
 * summarizer reads `../../prompts/` relative to their own file, and `node_modules` resolves from
 * the repository. Git-ignored; rebuilt on every bench run.
 */
export const JS_BUILD_DIR = path.join(REPO_ROOT, ".bench-build");

/** The built files a start-up measurement runs with `node` (no TypeScript loader in the figure). */
export interface BuiltJs {
  /** `abridge` itself: the built `src/cli/bin.ts`. */
  cliBin: string;
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
 * its `fixtures/`) file by file, unbundled: module loading then costs what it costs a user who
 * runs the published `dist/`, since the import graph is the same.
 */
export async function buildJs(): Promise<BuiltJs> {
  const start = performance.now();
  await rm(JS_BUILD_DIR, { recursive: true, force: true });
  const common = { bundle: false, format: "esm", platform: "node", target: "node20", sourcemap: false, logLevel: "error" } as const;
  await build({ ...common, entryPoints: await typeScriptFiles(path.join(REPO_ROOT, "src")), outdir: JS_BUILD_DIR, outbase: path.join(REPO_ROOT, "src") });
  const fixtures = path.join(REPO_ROOT, "test", "fixtures");
  await build({ ...common, entryPoints: await typeScriptFiles(fixtures), outdir: path.join(JS_BUILD_DIR, "fixtures"), outbase: fixtures });
  return {
    cliBin: path.join(JS_BUILD_DIR, "cli", "bin.js"),
    echoFixture: path.join(JS_BUILD_DIR, "fixtures", "echoServer.js"),
    buildMs: performance.now() - start,
  };
}

if (isMainModule(import.meta.url)) {
  const built = await buildJs();
  process.stdout.write(`${JSON.stringify(built)}\n`);
}
