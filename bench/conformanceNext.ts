/**
 * Runs the official MCP conformance suite's 0.2 line (`@modelcontextprotocol/conformance`
 * 0.2.0-alpha.12, installed as the alias `conformance-next`) against `abridge serve --http` in
 * front of test/fixtures/conformanceServer.ts, for the frozen requirement sets of revisions
 * 2026-07-28 (stateless) and 2025-11-25 (handshake), in full and compact mode. Every server
 * scenario a set names is run at that set's wire version; with `--not-scored`, those it lists as
 * `not_scored` (extensions such as tasks, pending scenarios) run too, for visibility, and count
 * for nothing.
 *
 * Scenarios are run one at a time (`--scenario`, `--spec-version`): the suite's `--requirements`
 * runs them all at once, and the fixture is an upstream of the handshake era, whose requests to
 * the client (sampling, elicitation) reach abridge with no sign of the call they belong to, so
 * abridge routes them to the most recent call of a client (src/upstream/mcp/requestRelay.ts);
 * scenarios overlapping on the one fixture would take each other's.
 *
 * The suite imports `globSync` from `fs`, which Node 20 lacks: it runs under
 * bench/conformanceNext/fsGlob.mjs, which supplies it.
 *
 * Prints `conformance-next: N passed, M failed` (scored scenarios over both sets and modes; a
 * scenario whose failures are all explained in KNOWN_REASONS counts as passed) and writes
 * bench/results/conformance-next.json and .md. Exits 1 when a scored scenario fails unexplained
 * or the suite could not run.
 *
 *   npx tsx bench/conformanceNext.ts [--modes full,compact] [--requirements 2026-07-28,2025-11-25] [--not-scored]
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startServe, writeFixtureConfig } from "./conformanceServe.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { runStandalone } from "./standalone.js";
import { messageOf } from "../src/model/errors.js";

const run = promisify(execFile);

const PACKAGE = path.join(REPO_ROOT, "node_modules", "conformance-next");
const CLI = path.join(PACKAGE, "dist", "index.js");
const GLOB_SHIM = path.join(REPO_ROOT, "bench", "conformanceNext", "fsGlob.mjs");
const SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12";
const REVISIONS = ["2026-07-28", "2025-11-25"];

/**
 * Failures that are decisions or limits, not bugs, keyed `mode:checkId` or `*:checkId`. A scored
 * scenario failing only on these counts as passed; anything else is "unexplained".
 */
const KNOWN_REASONS: Record<string, string> = {
  "compact:json-schema-2020-12-$schema":
    'compact mode lists an open schema ({type: "object"}) by design, the types living in the description; the full schema is one get_schema call away and calls are validated against it',
  "compact:json-schema-2020-12-$defs": "compact mode lists no $defs by design; get_schema returns the original with $defs",
  "compact:json-schema-2020-12-additionalProperties":
    "compact mode lists no additionalProperties by design; arguments are still validated against the full schema",
  "compact:sep-2106-composition-keywords-preserved": "compact mode lists no allOf by design; get_schema returns the original",
  "compact:sep-2106-conditional-keywords-preserved": "compact mode lists no if/then/else by design; get_schema returns the original",
  "compact:sep-2106-anchor-keyword-preserved": "compact mode lists no $defs (so no $anchor) by design; get_schema returns the original",
  "compact:sep-2106-schema-dialect-preserved": "compact mode lists no $schema by design; get_schema returns the original",
};

/** The server scenarios of a requirement set: those scored, and those run only for visibility. */
interface RequirementSet {
  revision: string;
  scored: string[];
  notScored: { scenario: string; reason: string }[];
}

/**
 * Reads `requirements/<revision>.yaml` of the package: the `server:` list, and the `not_scored`
 * entries whose `leg` is `server`. The files are a fixed, simple shape (lists of names, entries of
 * `key: value` lines), read line by line rather than with a YAML dependency.
 */
async function requirementSet(revision: string): Promise<RequirementSet> {
  const file = path.join(PACKAGE, "requirements", `${revision}.yaml`);
  const lines = (await readFile(file, "utf8")).split("\n");
  const scored: string[] = [];
  const notScored: { scenario: string; reason: string }[] = [];
  let section = "";
  let entry: { scenario?: string; leg?: string; reason?: string } | undefined;
  const flush = (): void => {
    if (entry?.scenario !== undefined && entry.leg === "server") notScored.push({ scenario: entry.scenario, reason: entry.reason ?? "" });
    entry = undefined;
  };
  for (const line of lines) {
    const top = /^([a-z_]+):\s*$/.exec(line);
    if (top) {
      flush();
      section = top[1]!;
      continue;
    }
    if (section === "server") {
      const item = /^\s+-\s+(\S+)\s*$/.exec(line);
      if (item) scored.push(item[1]!);
    } else if (section === "not_scored") {
      const start = /^\s+-\s+scenario:\s*(\S+)/.exec(line);
      if (start) {
        flush();
        entry = { scenario: start[1]! };
        continue;
      }
      const field = /^\s+(leg|reason):\s*(\S+)/.exec(line);
      if (field && entry) entry[field[1] as "leg" | "reason"] = field[2]!;
    }
  }
  flush();
  if (scored.length === 0) throw new Error(`${file}: no server scenarios found`);
  return { revision, scored, notScored };
}

/** One check as the suite writes it in checks.json. */
interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
  description?: string;
}

interface ScenarioResult {
  scenario: string;
  scored: boolean;
  /** Why it is not scored (extension, pending, added-after-release). */
  notScoredReason?: string;
  passed: number;
  failed: number;
  warnings: number;
  /** No failures, or only explained ones. */
  ok: boolean;
  failures: { id: string; message: string; reason: string }[];
}

interface RunResult {
  revision: string;
  mode: string;
  ok: boolean;
  error?: string;
  scenarios: ScenarioResult[];
  durationMs: number;
}

function reasonFor(mode: string, id: string): string {
  return KNOWN_REASONS[`${mode}:${id}`] ?? KNOWN_REASONS[`*:${id}`] ?? "unexplained";
}

/** Runs one scenario at `revision`'s wire and reads its checks (none when it wrote none). */
async function runScenario(url: string, scenario: string, revision: string, outDir: string): Promise<Check[]> {
  const dir = path.join(outDir, scenario.replace(/[^a-z0-9-]/gi, "_"));
  await mkdir(dir, { recursive: true });
  try {
    await run(
      process.execPath,
      ["--import", GLOB_SHIM, CLI, "server", "--url", url, "--scenario", scenario, "--spec-version", revision, "--force", "-o", dir],
      {
        cwd: REPO_ROOT,
        maxBuffer: 16 * 1024 * 1024,
        timeout: 5 * 60_000,
      },
    );
  } catch (err) {
    // The suite exits 1 when a check fails: a result. A run that wrote nothing is caught below.
    if (typeof (err as { code?: unknown }).code !== "number") throw err;
  }
  const checks: Check[] = [];
  for (const sub of await readdir(dir)) {
    const file = path.join(dir, sub, "checks.json");
    if (existsSync(file)) checks.push(...(JSON.parse(await readFile(file, "utf8")) as Check[]));
  }
  return checks;
}

async function runSet(set: RequirementSet, mode: string, config: string, work: string, withNotScored: boolean): Promise<RunResult> {
  const started = Date.now();
  const outDir = path.join(work, `out-${set.revision}-${mode}`);
  let serve: Awaited<ReturnType<typeof startServe>>;
  try {
    serve = await startServe(config, path.join(work, `cache-${set.revision}-${mode}`), mode);
  } catch (err) {
    return { revision: set.revision, mode, ok: false, error: messageOf(err), scenarios: [], durationMs: Date.now() - started };
  }
  try {
    const scenarios: ScenarioResult[] = [];
    const all = [...set.scored.map((scenario) => ({ scenario, reason: undefined as string | undefined })), ...(withNotScored ? set.notScored : [])];
    for (const { scenario, reason } of all) {
      const checks = await runScenario(serve.url, scenario, set.revision, outDir);
      const failures = checks
        .filter((c) => c.status === "FAILURE")
        .map((c) => ({ id: c.id, message: (c.errorMessage ?? c.description ?? "").slice(0, 400), reason: reasonFor(mode, c.id) }));
      const wrote = checks.length > 0;
      scenarios.push({
        scenario,
        scored: reason === undefined,
        ...(reason !== undefined ? { notScoredReason: reason } : {}),
        passed: checks.filter((c) => c.status === "SUCCESS").length,
        failed: failures.length + (wrote ? 0 : 1),
        warnings: checks.filter((c) => c.status === "WARNING").length,
        ok: wrote && failures.every((f) => f.reason !== "unexplained"),
        failures: wrote ? failures : [{ id: "(none)", message: "the scenario wrote no checks", reason: "unexplained" }],
      });
    }
    return { revision: set.revision, mode, ok: true, scenarios, durationMs: Date.now() - started };
  } catch (err) {
    return {
      revision: set.revision,
      mode,
      ok: false,
      error: `${messageOf(err)}\n${serve.stderr().slice(-2000)}`,
      scenarios: [],
      durationMs: Date.now() - started,
    };
  } finally {
    await serve.stop();
  }
}

function markdown(results: RunResult[]): string {
  const scored = (r: RunResult): ScenarioResult[] => r.scenarios.filter((s) => s.scored);
  const lines = [
    `# Conformance: \`abridge serve\` (streamable HTTP) with ${SUITE}, frozen requirement sets`,
    "",
    "Upstream: test/fixtures/conformanceServer.ts (`prefix = false`), a server of the handshake era. Scenarios run one at a time at the set's wire version; the sets' `not_scored` ones (extensions, pending) only with `--not-scored`, for visibility.",
    "",
    markdownTable(
      ["Requirements", "Mode", "Scored scenarios passed>", "Not scored passed>", "Checks passed>", "Checks failed>"],
      results.map((r) =>
        r.ok
          ? [
              r.revision,
              r.mode,
              `${scored(r).filter((s) => s.ok).length}/${scored(r).length}`,
              `${r.scenarios.filter((s) => !s.scored && s.ok).length}/${r.scenarios.filter((s) => !s.scored).length}`,
              r.scenarios.reduce((n, s) => n + s.passed, 0),
              r.scenarios.reduce((n, s) => n + s.failed, 0),
            ]
          : [r.revision, r.mode, `did not run: ${r.error ?? ""}`.slice(0, 200), undefined, undefined, undefined],
      ),
    ),
  ];
  for (const r of results.filter((x) => x.ok)) {
    const notes = r.scenarios.flatMap((s) =>
      s.failures.map((f) => [
        `${s.scenario}${s.scored ? "" : ` (not scored: ${s.notScoredReason})`}`,
        f.id,
        f.message.replace(/\|/g, "\\|").replace(/\n/g, " "),
        f.reason,
      ]),
    );
    lines.push("", `## ${r.revision}, ${r.mode} mode: failures`, "");
    lines.push(notes.length === 0 ? "None." : markdownTable(["Scenario", "Check", "Message", "Reason"], notes));
  }
  return `${lines.join("\n")}\n`;
}

function listArg(argv: readonly string[], flag: string, fallback: string[]): string[] {
  const index = argv.indexOf(flag);
  return index === -1 ? fallback : (argv[index + 1] ?? "").split(",").filter(Boolean);
}

/** What one run found: a result per requirement set and mode. */
interface ConformanceNextResult {
  suite: string;
  results: RunResult[];
}

/** Scored scenarios passed and failed; a set that did not run counts as one failure. */
function tally(results: readonly RunResult[]): { passed: number; failed: number } {
  const scored = results.flatMap((r) => r.scenarios.filter((s) => s.scored));
  const passed = scored.filter((s) => s.ok).length;
  return { passed, failed: scored.length - passed + results.filter((r) => !r.ok).length };
}

/**
 * Runs each requirement set of `--requirements` in each mode of `--modes`, printing progress and,
 * last, the `conformance-next: N passed, M failed` line CI reads.
 */
async function runConformanceNext(argv: readonly string[]): Promise<ConformanceNextResult> {
  const modes = listArg(argv, "--modes", ["full", "compact"]);
  const revisions = listArg(argv, "--requirements", REVISIONS);
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing; install ${SUITE} as the devDependency alias conformance-next`);
  const work = await mkdtemp(path.join(os.tmpdir(), "abridge-conformance-next-"));
  try {
    const config = await writeFixtureConfig(work);
    const results: RunResult[] = [];
    for (const revision of revisions) {
      const set = await requirementSet(revision);
      for (const mode of modes) {
        process.stdout.write(`conformance-next: ${revision} requirements, ${mode} mode...\n`);
        const result = await runSet(set, mode, config, work, argv.includes("--not-scored"));
        results.push(result);
        if (!result.ok) {
          process.stdout.write(`  did not run: ${result.error}\n`);
          continue;
        }
        const scored = result.scenarios.filter((s) => s.scored);
        process.stdout.write(
          `  ${revision} ${mode}: scored scenarios ${scored.filter((s) => s.ok).length}/${scored.length} passed; not scored ${result.scenarios.filter((s) => !s.scored && s.ok).length}/${result.scenarios.length - scored.length}\n`,
        );
        for (const s of result.scenarios) {
          for (const f of s.failures)
            process.stdout.write(`  ${s.scored ? "FAIL" : "fail (not scored)"} ${s.scenario}/${f.id}: ${f.message.split("\n")[0]} (reason: ${f.reason})\n`);
        }
      }
    }
    const { passed, failed } = tally(results);
    process.stdout.write(`conformance-next: ${passed} passed, ${failed} failed\n`);
    return { suite: SUITE, results };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

// A thrown error prints no count line; CI reads its absence as a run that failed.
await runStandalone(import.meta.url, {
  name: "conformance-next",
  run: runConformanceNext,
  markdown: (r) => markdown(r.results),
  json: (r, date) => ({ suite: r.suite, generatedAt: date, results: r.results }),
  markdownFile: (md) => md,
  failure: (r) => {
    const { failed } = tally(r.results);
    return failed === 0 ? undefined : `${failed} scored scenario(s) failed unexplained or did not run`;
  },
});
