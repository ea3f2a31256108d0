/**
 * The tail every bench script shares when it is run on its own (`npx tsx bench/<name>.ts`): run the
 * bench, write bench/results/<name>.json and <name>.md, print the markdown, and exit non-zero with
 * the reason when the run fails. `npm run bench` (bench/run.ts) imports the same bench functions and
 * never reaches this tail, because there the bench module is not the main module.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { messageOf } from "../src/model/errors.js";

/** bench/results, where every bench writes its figures. */
export const RESULTS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");

/** One bench as `runStandalone` runs it. */
export interface StandaloneBench<R extends object> {
  /** Stem of the result files: bench/results/<name>.json and <name>.md; also prefixes error messages. */
  readonly name: string;
  /** Runs the bench; `argv` is the command line after the script's path. */
  run(argv: readonly string[]): Promise<R> | R;
  /** The markdown printed on stdout. */
  markdown(result: R): string;
  /** The JSON document written, given the run's ISO date; default `{ date, ...result }`. */
  json?(result: R, date: string): unknown;
  /** The text of <name>.md, given the printed markdown; default that markdown and a newline. */
  markdownFile?(markdown: string, result: R, date: string): string;
  /** Why a finished run counts as failed (its files are still written), or undefined when it passed. */
  failure?(result: R): string | undefined;
}

/**
 * Whether the module at `moduleUrl` (its `import.meta.url`) is the script node was started with.
 * Compared as resolved paths, so `npx tsx bench/x.ts` and `npx tsx ./bench/x.ts` both count.
 */
export function isMainModule(moduleUrl: string): boolean {
  const script = process.argv[1];
  return script !== undefined && path.resolve(script) === fileURLToPath(moduleUrl);
}

/**
 * Writes bench/results/<name>.json (indented, newline-terminated) and, when `markdown` is given,
 * bench/results/<name>.md with that text as it is, creating the folder if needed. `dir` stands in
 * for bench/results where a test writes to a temporary folder.
 */
export async function writeResults(name: string, json: unknown, markdown?: string, dir = RESULTS_DIR): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `${name}.json`), `${JSON.stringify(json, null, 2)}\n`);
  if (markdown !== undefined) await writeFile(path.join(dir, `${name}.md`), markdown);
}

/**
 * Runs `bench` when the module at `moduleUrl` is the main module, and does nothing otherwise (the
 * module was imported, e.g. by bench/run.ts). On success it writes the result files and prints the
 * markdown; a thrown error, or a `failure` reason, goes to stderr as `<name>: <reason>` and sets
 * `process.exitCode` to 1. It never throws, so a script can end with `await runStandalone(...)`.
 */
export async function runStandalone<R extends object>(
  moduleUrl: string,
  bench: StandaloneBench<R>,
  argv: readonly string[] = process.argv.slice(2),
): Promise<void> {
  if (!isMainModule(moduleUrl)) return;
  try {
    const result = await bench.run(argv);
    const date = new Date().toISOString();
    const markdown = bench.markdown(result);
    const json = bench.json === undefined ? { date, ...result } : bench.json(result, date);
    const file = bench.markdownFile === undefined ? `${markdown}\n` : bench.markdownFile(markdown, result, date);
    await writeResults(bench.name, json, file);
    process.stdout.write(`${markdown}\n`);
    const failure = bench.failure?.(result);
    if (failure !== undefined) {
      process.stderr.write(`${bench.name}: ${failure}\n`);
      process.exitCode = 1;
    }
  } catch (err) {
    process.stderr.write(`${bench.name}: ${messageOf(err)}\n`);
    process.exitCode = 1;
  }
}
