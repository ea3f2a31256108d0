/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.13, every server
 * scenario, pending ones included) against `abridge serve --http 127.0.0.1:0` in front of
 * test/fixtures/conformanceServer.ts (`prefix = false`, so the tools keep the names the suite
 * calls), once in `full` mode and once in `compact` mode. Prints pass/fail counts per mode and
 * every failing check with its reason, and writes bench/results/conformance.json and .md.
 *
 * Exits non-zero only when the suite could not run at all (abridge did not start, the conformance
 * CLI is missing or wrote no results); failing checks are results, not errors.
 *
 *   npx tsx bench/conformance.ts [--modes full,compact]
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

const CONFORMANCE_CLI = path.join(REPO_ROOT, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const SUITE_VERSION = "0.1.13";
/** Scenarios 0.1.13 keeps out of its default ("active") suite; run here anyway and marked. */
const PENDING = new Set(["json-schema-2020-12", "server-sse-polling"]);

/**
 * Why a check fails or warns in front of abridge when that is a decision or a limit rather than a
 * bug. Keyed `mode:checkId` or `*:checkId`. Anything failing that is not listed here is reported
 * as "unexplained" so a regression stands out.
 */
const KNOWN_REASONS: Record<string, string> = {
  "compact:json-schema-2020-12-$schema":
    'compact mode lists an open schema ({type: "object"}, or names and types with compact_schema) by design, the types living in the parameter line of the description; the full schema, $schema included, is one get_schema call away and calls are validated against it',
  "compact:json-schema-2020-12-$defs":
    "compact mode lists no $defs by design (its open schema has no $ref to resolve); get_schema returns the original with $defs",
  "compact:json-schema-2020-12-additionalProperties":
    "compact mode lists no additionalProperties by design; arguments are still validated against the full schema before forwarding",
  "*:server-sse-priming-event":
    "abridge's HTTP front end keeps no event store, so POST streams carry no priming event id (resumability is not offered; a SHOULD, reported as a warning)",
  "*:server-sse-retry-field": "no event store, so no `retry` field is sent (a SHOULD, reported as a warning)",
};

/** One check as the suite writes it in checks.json. */
interface Check {
  id: string;
  name: string;
  description: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
}

/** Results of one scenario. */
interface ScenarioResult {
  scenario: string;
  pending: boolean;
  passed: number;
  failed: number;
  warnings: number;
  failures: { id: string; message: string; reason: string }[];
  warningsList: { id: string; message: string; reason: string }[];
}

/** Results of one mode. */
interface ModeResult {
  mode: string;
  ok: boolean;
  error?: string;
  scenarios: ScenarioResult[];
  checks: { passed: number; failed: number; warnings: number };
  /** Same counts over the suite's default ("active") scenarios only. */
  active: { passed: number; failed: number; scenariosPassed: number; scenarios: number };
  scenariosPassed: number;
  durationMs: number;
}

function reasonFor(mode: string, id: string): string {
  return KNOWN_REASONS[`${mode}:${id}`] ?? KNOWN_REASONS[`*:${id}`] ?? "unexplained";
}

/** The scenario name of a result directory `server-<scenario>-<ISO timestamp with dashes>`. */
function scenarioOf(dir: string): string {
  return dir.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/, "");
}

async function readResults(outDir: string, mode: string): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  for (const dir of (await readdir(outDir)).sort()) {
    const file = path.join(outDir, dir, "checks.json");
    if (!existsSync(file)) continue;
    const checks = JSON.parse(await readFile(file, "utf8")) as Check[];
    const scenario = scenarioOf(dir);
    const describe = (c: Check): { id: string; message: string; reason: string } => ({
      id: c.id,
      message: c.errorMessage ?? c.description,
      reason: reasonFor(mode, c.id),
    });
    results.push({
      scenario,
      pending: PENDING.has(scenario),
      passed: checks.filter((c) => c.status === "SUCCESS").length,
      failed: checks.filter((c) => c.status === "FAILURE").length,
      warnings: checks.filter((c) => c.status === "WARNING").length,
      failures: checks.filter((c) => c.status === "FAILURE").map(describe),
      warningsList: checks.filter((c) => c.status === "WARNING").map(describe),
    });
  }
  return results;
}

async function runMode(mode: string, config: string, work: string): Promise<ModeResult> {
  const started = Date.now();
  const cacheDir = path.join(work, `cache-${mode}`);
  const outDir = path.join(work, `out-${mode}`);
  await mkdir(outDir, { recursive: true });
  const empty: ModeResult = {
    mode,
    ok: false,
    scenarios: [],
    checks: { passed: 0, failed: 0, warnings: 0 },
    active: { passed: 0, failed: 0, scenariosPassed: 0, scenarios: 0 },
    scenariosPassed: 0,
    durationMs: 0,
  };
  let serve: Awaited<ReturnType<typeof startServe>>;
  try {
    serve = await startServe(config, cacheDir, mode);
  } catch (err) {
    return { ...empty, error: messageOf(err), durationMs: Date.now() - started };
  }
  try {
    try {
      await run(process.execPath, [CONFORMANCE_CLI, "server", "--url", serve.url, "--suite", "all", "-o", outDir], {
        cwd: REPO_ROOT,
        maxBuffer: 64 * 1024 * 1024,
        timeout: 15 * 60_000,
      });
    } catch (err) {
      // The suite exits 1 when any check fails; that is a result. No results at all is not.
      const code = (err as { code?: unknown }).code;
      if (typeof code !== "number") throw err;
    }
    const scenarios = await readResults(outDir, mode);
    if (scenarios.length === 0) throw new Error(`the conformance suite wrote no results\n${serve.stderr().slice(-2000)}`);
    const sum = (list: ScenarioResult[], key: "passed" | "failed" | "warnings"): number => list.reduce((n, s) => n + s[key], 0);
    const active = scenarios.filter((s) => !s.pending);
    return {
      mode,
      ok: true,
      scenarios,
      checks: { passed: sum(scenarios, "passed"), failed: sum(scenarios, "failed"), warnings: sum(scenarios, "warnings") },
      active: {
        passed: sum(active, "passed"),
        failed: sum(active, "failed"),
        scenariosPassed: active.filter((s) => s.failed === 0).length,
        scenarios: active.length,
      },
      scenariosPassed: scenarios.filter((s) => s.failed === 0).length,
      durationMs: Date.now() - started,
    };
  } catch (err) {
    return { ...empty, error: messageOf(err), durationMs: Date.now() - started };
  } finally {
    await serve.stop();
  }
}

function markdown(results: ModeResult[]): string {
  const lines = [
    `# Conformance: \`abridge serve\` (streamable HTTP) with @modelcontextprotocol/conformance ${SUITE_VERSION}`,
    "",
    "Upstream: test/fixtures/conformanceServer.ts (`prefix = false`). All server scenarios, pending ones (marked *) included.",
    "",
    markdownTable(
      ["Mode", "Checks passed>", "Checks failed>", "Warnings>", "Scenarios passed>", "Active suite checks>", "Active scenarios>"],
      results.map((r) =>
        r.ok
          ? [
              r.mode,
              r.checks.passed,
              r.checks.failed,
              r.checks.warnings,
              `${r.scenariosPassed}/${r.scenarios.length}`,
              `${r.active.passed}/${r.active.passed + r.active.failed}`,
              `${r.active.scenariosPassed}/${r.active.scenarios}`,
            ]
          : [r.mode, undefined, undefined, undefined, `did not run: ${r.error ?? ""}`.slice(0, 200), undefined, undefined],
      ),
    ),
  ];
  for (const r of results.filter((m) => m.ok)) {
    const notes = r.scenarios.flatMap((s) => [
      ...s.failures.map((f) => [`${s.scenario}${s.pending ? " *" : ""}`, f.id, "FAILURE", f.message, f.reason]),
      ...s.warningsList.map((w) => [`${s.scenario}${s.pending ? " *" : ""}`, w.id, "WARNING", w.message, w.reason]),
    ]);
    lines.push("", `## ${r.mode} mode: failures and warnings`, "");
    lines.push(notes.length === 0 ? "None." : markdownTable(["Scenario", "Check", "Status", "Message", "Reason"], notes));
  }
  return `${lines.join("\n")}\n`;
}

/** What one run of the suite found: each mode's result. */
interface ConformanceResult {
  suite: string;
  results: ModeResult[];
}

/** Runs the suite against abridge in each mode of `--modes` (default full, compact), printing progress. */
async function runConformance(argv: readonly string[]): Promise<ConformanceResult> {
  const modesIndex = argv.indexOf("--modes");
  const modes = modesIndex === -1 ? ["full", "compact"] : (argv[modesIndex + 1] ?? "").split(",").filter(Boolean);
  if (!existsSync(CONFORMANCE_CLI)) throw new Error(`${CONFORMANCE_CLI} is missing; install @modelcontextprotocol/conformance@${SUITE_VERSION}`);
  const work = await mkdtemp(path.join(os.tmpdir(), "abridge-conformance-"));
  try {
    const config = await writeFixtureConfig(work);
    const results: ModeResult[] = [];
    for (const mode of modes) {
      process.stdout.write(`conformance: ${mode} mode...\n`);
      const result = await runMode(mode, config, work);
      results.push(result);
      if (!result.ok) {
        process.stdout.write(`  did not run: ${result.error}\n`);
        continue;
      }
      process.stdout.write(
        `  ${mode}: ${result.checks.passed} checks passed, ${result.checks.failed} failed, ${result.checks.warnings} warnings; ` +
          `scenarios ${result.scenariosPassed}/${result.scenarios.length} (active suite: checks ${result.active.passed}/${result.active.passed + result.active.failed}, scenarios ${result.active.scenariosPassed}/${result.active.scenarios})\n`,
      );
      for (const s of result.scenarios) {
        for (const f of s.failures) process.stdout.write(`  FAIL ${s.scenario}/${f.id}: ${f.message} (reason: ${f.reason})\n`);
      }
    }
    return { suite: `@modelcontextprotocol/conformance@${SUITE_VERSION}`, results };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

// Failing checks are results; only a mode that could not run at all fails the script.
await runStandalone(import.meta.url, {
  name: "conformance",
  run: runConformance,
  markdown: (r) => markdown(r.results),
  json: (r, date) => ({ suite: r.suite, generatedAt: date, results: r.results }),
  markdownFile: (md) => md,
  failure: (r) => {
    const notRun = r.results.filter((m) => !m.ok).map((m) => m.mode);
    return notRun.length === 0 ? undefined : `the suite did not run in ${notRun.join(", ")} mode`;
  },
});
