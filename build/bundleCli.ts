/**
 * Builds the `abridge` command as an esbuild bundle: `npm run build` runs tsc for the library
 * (`dist/index.js` and its declarations, file by file) and then this script, which writes the CLI
 * over tsc's `dist/cli/bin.js`.
 *
 * Why a bundle: run file by file, `abridge serve` loaded ~380 modules before it answered
 * `initialize`, and resolving and reading them was most of its start-up. Why split: one bundle
 * holding every command makes V8 pre-parse all of it on every start; with `splitting`, each
 * `await import()` of the CLI (one per command, and the modules serve loads on first use) is a
 * chunk read only when it runs. See docs/performance.md, "Start-up and the bundle".
 *
 * Layout: every output file sits in `<outdir>`, which must be two levels below the package root
 * (`dist/cli/`): src/model/version.ts reads `../../package.json` and the summarizer
 * `../../prompts/` relative to their own module, which in the bundle is a chunk in `<outdir>`. The
 * code runtime's worker is an entry of its own, `<outdir>/codeWorker.js`, beside the chunk of
 * src/code/runtime/workerPool.ts that starts it from `./codeWorker.js`.
 *
 * Why here and not in bench/: this is a build step of the package (`prepack` runs it), and the
 * bench imports it so that the figures it prints are those of the file users run.
 *
 * Run: `npx tsx build/bundleCli.ts [outdir]` (default dist/cli).
 */
import { rm, readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type BuildOptions, type Metafile, type Plugin } from "esbuild";

/** The repository root (this file is in `build/`). */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Options of {@link bundleCli}. */
export interface BundleCliOptions {
  /** Where the bundle goes: two levels below the package root (default `dist/cli`). */
  outdir?: string;
  /** Chunks loaded on demand (default true); false writes one file per entry, for comparison. */
  splitting?: boolean;
  /** Whitespace and syntax minified, identifiers kept (default true): less for V8 to parse. */
  minify?: boolean;
  /** Identifiers minified too (default false). */
  minifyIdentifiers?: boolean;
}

/** What {@link bundleCli} wrote. */
export interface BundledCli {
  /** The CLI entry: `<outdir>/bin.js`. */
  bin: string;
  /** Every file written, with its size in bytes. */
  files: { file: string; bytes: number }[];
  /** Wall time of the build. */
  buildMs: number;
}

/**
 * Packages left to Node's resolver rather than copied into the bundle: they are found at run time
 * by file (quickjs-emscripten and sucrase are handed to the worker thread by URL) or load a
 * `.wasm` file relative to their own. What abridge requires on first use through `createRequire`
 * (the tokenizer, re2js, ajv) is not seen by esbuild and stays outside without being listed.
 */
const EXTERNAL = ["quickjs-emscripten", "@jitl/*", "sucrase", "gpt-tokenizer", "gpt-tokenizer/*"];

/**
 * ESM output has no `require`; CommonJS dependencies bundled in call it for Node built-ins. The
 * banner gives the module one, made for the chunk's own URL.
 */
const REQUIRE_BANNER = 'import { createRequire as __abridgeCreateRequire } from "node:module"; const require = __abridgeCreateRequire(import.meta.url);';

/**
 * The SDK's `AjvJsonSchemaValidator`, as the bundle has it: a stand-in that requires the SDK's own
 * class (its CommonJS build, with ajv) when a validator is first asked for. The SDK's `Server` and
 * `Client` import the class, and with it ajv (over 300 kB), on load; abridge gives both a validator
 * made on first use (src/util/lazyValidator.ts), which only
 * elicitation and output-schema checks it does not make would ask for. The file-by-file build
 * (the library's dist/) keeps the SDK's import as it is.
 */
const LAZY_AJV_PROVIDER = `
import { createRequire } from "node:module";
let Real;
export class AjvJsonSchemaValidator {
  constructor(ajv) { this.ajv = ajv; this.real = undefined; }
  getValidator(schema) {
    Real ??= createRequire(import.meta.url)("@modelcontextprotocol/sdk/validation/ajv-provider.js").AjvJsonSchemaValidator;
    this.real ??= new Real(this.ajv);
    return this.real.getValidator(schema);
  }
}
`;

const lazyAjvProvider: Plugin = {
  name: "lazy-ajv-provider",
  setup(b) {
    // Both the SDK's relative imports (`../validation/ajv-provider.js`) and abridge's by package path.
    b.onResolve({ filter: /(^|\/)validation\/ajv-provider\.js$/ }, (args) =>
      args.importer.includes(`${path.sep}@modelcontextprotocol${path.sep}sdk${path.sep}`) || args.path.startsWith("@modelcontextprotocol/sdk/")
        ? { path: "ajv-provider", namespace: "lazy-ajv-provider" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "lazy-ajv-provider" }, () => ({ contents: LAZY_AJV_PROVIDER, loader: "js", resolveDir: PACKAGE_ROOT }));
  },
};

function options(outdir: string, opts: BundleCliOptions): BuildOptions & { metafile: true } {
  return {
    absWorkingDir: PACKAGE_ROOT,
    entryPoints: { bin: "src/cli/bin.ts", codeWorker: "src/code/runtime/codeWorker.ts" },
    outdir,
    bundle: true,
    splitting: opts.splitting ?? true,
    minifyWhitespace: opts.minify ?? true,
    minifySyntax: opts.minify ?? true,
    minifyIdentifiers: opts.minifyIdentifiers ?? false,
    format: "esm",
    platform: "node",
    target: "node20",
    // Chunks sit beside the entries: their relative reads of package.json and prompts/ need the depth.
    chunkNames: "chunk-[hash]",
    entryNames: "[name]",
    external: EXTERNAL,
    banner: { js: REQUIRE_BANNER },
    legalComments: "none",
    sourcemap: false,
    metafile: true,
    plugins: [lazyAjvProvider],
    logLevel: "error",
  };
}

/** Builds the CLI bundle into `opts.outdir`, removing the chunks of an earlier build first; see the file comment. */
export async function bundleCli(opts: BundleCliOptions = {}): Promise<BundledCli> {
  const start = performance.now();
  const outdir = path.resolve(PACKAGE_ROOT, opts.outdir ?? path.join("dist", "cli"));
  // tsc writes its own files into dist/cli too (the library's runCli.js and its neighbours); only
  // what an earlier bundle left (its chunks) is removed, so no stale chunk lingers.
  await removeOldChunks(outdir);
  const result = await build(options(outdir, opts));
  return { bin: path.join(outdir, "bin.js"), files: outputs(result.metafile), buildMs: performance.now() - start };
}

function outputs(metafile: Metafile): { file: string; bytes: number }[] {
  return Object.entries(metafile.outputs).map(([file, out]) => ({ file: path.resolve(PACKAGE_ROOT, file), bytes: out.bytes }));
}

async function removeOldChunks(outdir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(outdir);
  } catch {
    return;
  }
  // tsc's map of its own bin.js no longer describes the file.
  const stale = names.filter((n) => /^chunk-[A-Z0-9]+\.js$/.test(n) || n === "bin.js.map");
  await Promise.all(stale.map((n) => rm(path.join(outdir, n), { force: true })));
}

if (process.argv[1] !== undefined && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  const built = await bundleCli(process.argv[2] !== undefined ? { outdir: process.argv[2] } : {});
  const kib = built.files.reduce((n, f) => n + f.bytes, 0) / 1024;
  process.stdout.write(
    `abridge CLI bundle: ${built.files.length} files, ${kib.toFixed(0)} KiB, in ${path.relative(PACKAGE_ROOT, path.dirname(built.bin))} (${built.buildMs.toFixed(0)} ms)\n`,
  );
}
