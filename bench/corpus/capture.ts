/**
 * Refreshes the corpus: installs each server of `sources.json` into a scratch folder outside the
 * repository, runs it with `node` on its bin, and writes what `abridge record` prints to
 * `servers/<server>.json`, untouched. Then rewrites the table in README.md (package, licence,
 * tools, full tokens) from every file in `servers/`.
 *
 *   npx tsx bench/corpus/capture.ts [--install-dir DIR] [--out DIR] [--only a,b] [--missing] [--jobs N] [--table] [--licences]
 *
 * `--missing` records only servers that have no file yet; `--table` only rewrites the table;
 * `--licences` asks `npm view <pkg> license` for corpus files whose licence is not known yet
 * (files recorded before this script).
 * A server that fails to install or to list its tools is reported and skipped: its old file, if
 * any, stays. Licences come from each installed package's own package.json (what `npm view
 * <pkg> license` shows) and are kept in `licences.json`, so rewriting the table asks no registry.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { tokenReport } from "../../src/catalog/renderTools.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import { CORPUS_DIR, loadCorpus, REPO_ROOT, summarizedCatalog } from "../corpus.js";
import { messageOf } from "../../src/model/errors.js";

const run = promisify(execFile);

/** One server to capture. */
interface Source {
  /** Name of the server in the corpus (file `servers/<server>.json`). */
  server: string;
  /** `name@version`, installed exactly. */
  package: string;
  /** Which bin of the package to run (default: the only one, or the one named like the package). */
  bin?: string;
  /** Arguments after the bin. */
  args?: string[];
  /** Extra environment: placeholder values for servers that insist on a key at start-up. */
  env?: Record<string, string>;
  /** Run install scripts (off by default: most only fetch browsers or binaries, which cannot be had). */
  scripts?: boolean;
  /** What a refresh should know, e.g. why it would not reproduce the file. */
  note?: string;
  /** Why the server is not in the corpus (it could not list its tools here); tried only when named by `--only`. */
  skipped?: string;
}

interface Options {
  installDir: string;
  /** Where recorded files go (default `servers/`); another folder compares a refresh with the corpus before replacing it. */
  outDir: string;
  only: Set<string> | undefined;
  missing: boolean;
  jobs: number;
  tableOnly: boolean;
  lookUpLicences: boolean;
}

function parseOptions(argv: string[]): Options {
  const options: Options = {
    installDir: "/tmp/corpus-install",
    outDir: path.join(CORPUS_DIR, "servers"),
    only: undefined,
    missing: false,
    jobs: 2,
    tableOnly: false,
    lookUpLicences: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg}: expected a value`);
      return v;
    };
    if (arg === "--install-dir") options.installDir = path.resolve(value());
    else if (arg === "--out") options.outDir = path.resolve(value());
    else if (arg === "--only") options.only = new Set(value().split(",").filter(Boolean));
    else if (arg === "--missing") options.missing = true;
    else if (arg === "--jobs") options.jobs = Math.max(1, Number(value()) || 1);
    else if (arg === "--table") options.tableOnly = true;
    else if (arg === "--licences") options.lookUpLicences = true;
    else throw new Error(`unknown option ${arg}`);
  }
  if (options.installDir.startsWith(REPO_ROOT + path.sep)) throw new Error(`--install-dir must be outside the repository (${REPO_ROOT})`);
  return options;
}

/** `@scope/name@1.2.3` -> `["@scope/name", "1.2.3"]`. */
function splitSpec(spec: string): [string, string] {
  const at = spec.lastIndexOf("@");
  if (at <= 0) throw new Error(`${spec}: expected name@version`);
  return [spec.slice(0, at), spec.slice(at + 1)];
}

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, "utf8")) as T;
}

interface PackageJson {
  name: string;
  version: string;
  license?: string | { type?: string };
  bin?: string | Record<string, string>;
}

function licenceOf(pkg: PackageJson): string {
  const l = pkg.license;
  return typeof l === "string" ? l : (l?.type ?? "none declared");
}

function binOf(pkg: PackageJson, source: Source): string {
  const bin = pkg.bin;
  if (typeof bin === "string") return bin;
  if (bin === undefined || Object.keys(bin).length === 0) throw new Error(`${pkg.name} has no bin`);
  if (source.bin !== undefined) {
    const chosen = bin[source.bin];
    if (chosen === undefined) throw new Error(`${pkg.name} has no bin "${source.bin}" (bins: ${Object.keys(bin).join(", ")})`);
    return chosen;
  }
  const own = pkg.name.split("/").pop() ?? pkg.name;
  return bin[own] ?? Object.values(bin)[0]!;
}

async function install(source: Source, dir: string): Promise<PackageJson> {
  const [name, version] = splitSpec(source.package);
  const manifest = path.join(dir, "node_modules", name, "package.json");
  if (!existsSync(manifest) || readJson<PackageJson>(manifest).version !== version) {
    await mkdir(dir, { recursive: true });
    await run(
      "npm",
      [
        "install",
        "--no-save",
        "--no-audit",
        "--no-fund",
        "--no-package-lock",
        ...(source.scripts ? [] : ["--ignore-scripts"]),
        "--prefix",
        dir,
        source.package,
      ],
      { timeout: 900_000, maxBuffer: 64 * 1024 * 1024 },
    );
  }
  return readJson<PackageJson>(manifest);
}

/** Installs and records one server; returns the number of tools written. */
async function capture(source: Source, options: Options): Promise<number> {
  const dir = path.join(options.installDir, source.server);
  const pkg = await install(source, dir);
  const [name] = splitSpec(source.package);
  const bin = path.resolve(dir, "node_modules", name, binOf(pkg, source));
  const work = path.join(dir, "work");
  const home = path.join(dir, "home");
  await Promise.all([mkdir(work, { recursive: true }), mkdir(home, { recursive: true })]);
  const config = {
    servers: {
      [source.server]: {
        command: process.execPath,
        args: [bin, ...(source.args ?? [])],
        env: { HOME: home, ...source.env },
        cwd: work,
        connect_timeout_ms: 90_000,
        timeout_ms: 60_000,
      },
    },
  };
  const configFile = path.join(dir, "abridge.json");
  await writeFile(configFile, JSON.stringify(config, null, 2));
  await mkdir(options.outDir, { recursive: true });
  const out = path.join(options.outDir, `${source.server}.json`);
  const { stdout } = await run(
    process.execPath,
    [
      "--import",
      "tsx",
      path.join(REPO_ROOT, "src/cli/bin.ts"),
      "record",
      source.server,
      "--config",
      configFile,
      "--package",
      source.package,
      "--log-level",
      "error",
    ],
    { cwd: REPO_ROOT, timeout: 180_000, maxBuffer: 256 * 1024 * 1024, env: { PATH: process.env.PATH ?? "", HOME: home } },
  );
  const recorded = JSON.parse(stdout) as { tools: unknown[] };
  if (recorded.tools.length === 0) throw new Error("listed no tools");
  await writeFile(`${out}.tmp`, stdout);
  await rename(`${out}.tmp`, out);
  // Read, merged and written in one synchronous step: captures run side by side (in this process
  // and perhaps in another) and must not drop each other's entries.
  Object.assign(licences, licenceFile(), { [source.package]: licenceOf(pkg) });
  writeFileSync(LICENCES, `${JSON.stringify(sortKeys(licences), null, 2)}\n`);
  return recorded.tools.length;
}

const LICENCES = path.join(CORPUS_DIR, "licences.json");
const licences = licenceFile();

function licenceFile(): Record<string, string> {
  return existsSync(LICENCES) ? readJson<Record<string, string>>(LICENCES) : {};
}

function sortKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Runs `fn` over `items`, at most `jobs` at a time. */
async function pool<T>(items: readonly T[], jobs: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(jobs, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

const TABLE_START = "<!-- corpus-table:start -->";
const TABLE_END = "<!-- corpus-table:end -->";

/** Rewrites the README table from every recorded file. */
async function writeTable(): Promise<void> {
  const corpus = loadCorpus();
  const rows: string[] = [];
  let tools = 0;
  let tokens = 0;
  for (const server of corpus) {
    const spec = readJson<{ package?: string }>(server.file).package ?? "";
    const { tools: catalog } = await summarizedCatalog([server], new ExtractiveSummarizer());
    const full = tokenReport(catalog).full.openAiTokens;
    tools += server.tools.length;
    tokens += full;
    rows.push(`| ${server.server} | ${spec} | ${licences[spec] ?? "unknown"} | ${server.tools.length} | ${full.toLocaleString("en-US")} |`);
  }
  const table = [
    "| server | package | licence | tools | full tokens |",
    "|---|---|---|--:|--:|",
    ...rows,
    `| total: ${corpus.length} servers | | | ${tools.toLocaleString("en-US")} | ${tokens.toLocaleString("en-US")} |`,
  ].join("\n");
  const readme = path.join(CORPUS_DIR, "README.md");
  const text = readFileSync(readme, "utf8");
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start === -1 || end === -1) throw new Error(`${readme}: expected ${TABLE_START} ... ${TABLE_END}`);
  await writeFile(readme, `${text.slice(0, start + TABLE_START.length)}\n${table}\n${text.slice(end)}`);
  console.log(`table: ${corpus.length} servers, ${tools} tools, ${tokens} full tokens`);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (!options.tableOnly) {
    const sources = readJson<Source[]>(path.join(CORPUS_DIR, "sources.json"));
    const existing = new Set(readdirSync(path.join(CORPUS_DIR, "servers")).map((f) => f.replace(/\.json$/, "")));
    const chosen = sources.filter((s) =>
      options.only === undefined ? s.skipped === undefined && (!options.missing || !existing.has(s.server)) : options.only.has(s.server),
    );
    const failed: string[] = [];
    await pool(chosen, options.jobs, async (source) => {
      const started = Date.now();
      try {
        const count = await capture(source, options);
        console.log(`ok      ${source.server} (${source.package}): ${count} tools in ${Math.round((Date.now() - started) / 1000)} s`);
      } catch (err) {
        const e = err as { stderr?: string; message?: string };
        const reason = (e.stderr?.trim().split("\n").slice(-3).join(" | ") || e.message || String(err)).slice(0, 400);
        failed.push(source.server);
        console.log(`skipped ${source.server} (${source.package}): ${reason}`);
        await rm(path.join(options.outDir, `${source.server}.json.tmp`), { force: true });
      }
    });
    console.log(`recorded ${chosen.length - failed.length} of ${chosen.length}; skipped: ${failed.join(", ") || "none"}`);
  }
  if (options.lookUpLicences) await lookUpLicences();
  await writeTable();
}

/** Fills in the licence of corpus files recorded without this script, from the registry. */
async function lookUpLicences(): Promise<void> {
  for (const server of loadCorpus()) {
    const spec = readJson<{ package?: string }>(server.file).package;
    if (spec === undefined || licences[spec] !== undefined) continue;
    const { stdout } = await run("npm", ["view", spec, "license"], { timeout: 60_000 });
    licences[spec] = stdout.trim() || "none declared";
  }
  await writeFile(LICENCES, `${JSON.stringify(sortKeys(licences), null, 2)}\n`);
}

main().catch((err: unknown) => {
  console.error(messageOf(err));
  process.exitCode = 1;
});
