/**
 * The official MCP conformance suite's client scenarios (`conformance client`, the 0.2 alpha
 * installed as `conformance-next`) with abridge as the client: each scenario starts a server and
 * runs this file with `--client <url>`, which opens a Bridge with one upstream at that URL
 * (`protocol = "auto"`, as a user's config would have it) and does what the scenario asks through
 * it. The scenarios that apply to an upstream client:
 *
 * - `initialize` (a server of the handshake; abridge probes with server/discover first, gets no
 *   discover result and initializes),
 * - `tools_call` at 2025-11-25 and at 2026-07-28 (list, then call add_numbers),
 * - `request-metadata` (2026-07-28: the `_meta` envelope and the MCP-Protocol-Version header on
 *   every request, and asking again when the first request is refused with -32022),
 * - `sep-2322-client-request-state` (2026-07-28: `input_required` answered and the request sent
 *   again with the server's requestState, unchanged, or none when it gave none),
 * - `http-standard-headers` (2026-07-28: Mcp-Method and Mcp-Name on the POSTs),
 * - `http-custom-headers` and `http-invalid-tool-headers` (2026-07-28: the `Mcp-Param-*` headers
 *   a tool's `x-mcp-header` declarations ask for, and a tool whose declarations are invalid left out).
 *
 * Prints each scenario's checks and one line `conformance client: N passed, N failed` (checks),
 * and writes bench/results/conformance-client.json and .md. Node 20 lacks `fs.globSync`, which the
 * suite imports: it runs under bench/conformanceNext/fsGlob.mjs. Exits non-zero only when the suite
 * could not run at all.
 *
 *   npx tsx bench/conformanceClient.ts [--scenarios tools_call@2026-07-28,...]
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { runStandalone } from "./standalone.js";

const run = promisify(execFile);

const SUITE = path.join(REPO_ROOT, "node_modules", "conformance-next", "dist", "index.js");
const GLOB_SHIM = path.join(REPO_ROOT, "bench", "conformanceNext", "fsGlob.mjs");
const THIS_FILE = fileURLToPath(import.meta.url);

/** Scenario and the revision its server speaks. */
const DEFAULT_SCENARIOS = [
  "initialize@2025-11-25",
  "tools_call@2025-11-25",
  "tools_call@2026-07-28",
  "request-metadata@2026-07-28",
  "sep-2322-client-request-state@2026-07-28",
  "http-standard-headers@2026-07-28",
  "http-custom-headers@2026-07-28",
  "http-invalid-tool-headers@2026-07-28",
];

/** One check of a scenario as the suite writes it in checks.json. */
interface Check {
  id: string;
  status: string;
  description?: string;
  errorMessage?: string;
}

/** One scenario's outcome. */
interface ScenarioResult {
  scenario: string;
  specVersion: string;
  passed: number;
  failed: number;
  warnings: number;
  problems: string[];
}

if (process.argv.includes("--client")) await actAsClient();
else {
  await runStandalone(import.meta.url, {
    name: "conformance-client",
    run: runSuite,
    markdown: (r) => [clientTable(r), ...(problemLines(r).length > 0 ? ["", problemLines(r).join("\n")] : [])].join("\n"),
    json: (r, date) => ({ startedAt: date, ...r }),
    markdownFile: (_md, r) =>
      `# Conformance: abridge as an upstream client\n\n${clientTable(r)}\n${problemLines(r).length > 0 ? `\n${problemLines(r).join("\n")}\n` : ""}`,
  });
}

/**
 * The client the suite runs: a Bridge over one upstream at the URL the suite gives (last
 * argument), doing what $MCP_CONFORMANCE_SCENARIO asks.
 */
async function actAsClient(): Promise<void> {
  const url = process.argv.at(-1) ?? "";
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
  const { Bridge, parseConfigText } = await import("../src/index.js");
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-conformance-client-"));
  const config = parseConfigText(
    ['mode = "full"', 'log_level = "error"', "", "[servers.conformance]", `url = ${JSON.stringify(url)}`, 'protocol = "auto"', "prefix = false", ""].join("\n"),
    { file: path.join(dir, "abridge.toml"), env: {} },
  );
  const bridge = await Bridge.open({ config, cacheFile: path.join(dir, "summaries.jsonl"), env: {} });
  // The client behind the calls: what a user's client would answer to elicitation and sampling.
  const relay = {
    client: "conformance-client",
    request: async (method: string) =>
      method === "elicitation/create"
        ? { action: "accept", content: { confirmed: true } }
        : { role: "assistant", content: { type: "text", text: "ok" }, model: "conformance" },
    notify: () => undefined,
  };
  try {
    await bridge.start();
    const status = bridge.status("conformance");
    if (status?.state !== "ready") throw new Error(`the upstream did not start: ${JSON.stringify(status?.error)}`);
    const tools = bridge.tools("conformance").map((t) => t.name);
    if (scenario === "tools_call") await bridge.callServerTool("conformance", "add_numbers", { a: 5, b: 3 });
    if (scenario === "sep-2322-client-request-state") {
      for (const tool of tools)
        await bridge.callServerTool("conformance", tool, {}, { relay }).catch((err: unknown) => console.error(`${tool}: ${String(err)}`));
    }
    if (scenario === "http-standard-headers" || scenario === "request-metadata" || scenario === "http-invalid-tool-headers") {
      for (const tool of tools) await bridge.callServerTool("conformance", tool, {}).catch((err: unknown) => console.error(`${tool}: ${String(err)}`));
    }
    // The calls a scenario names in its context (tool and arguments), made as a model would.
    for (const call of contextCalls()) {
      await bridge.callServerTool("conformance", call.name, call.arguments).catch((err: unknown) => console.error(`${call.name}: ${String(err)}`));
    }
  } finally {
    await bridge.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** `toolCalls` of $MCP_CONFORMANCE_CONTEXT: what the scenario wants called. */
function contextCalls(): { name: string; arguments: Record<string, unknown> }[] {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT;
  if (raw === undefined) return [];
  const context = JSON.parse(raw) as { toolCalls?: { name?: unknown; arguments?: unknown }[] };
  return (context.toolCalls ?? []).flatMap((c) =>
    typeof c.name === "string"
      ? [{ name: c.name, arguments: typeof c.arguments === "object" && c.arguments !== null ? (c.arguments as Record<string, unknown>) : {} }]
      : [],
  );
}

/** Every scenario's checks, as conformance-client.json holds them (beside the run's start). */
interface ConformanceClientResult {
  suite: string;
  results: ScenarioResult[];
}

/**
 * Runs every scenario (or those of `--scenarios`) with this file as the client, and prints the
 * `conformance client: N passed, M failed` line CI reads.
 */
async function runSuite(argv: readonly string[]): Promise<ConformanceClientResult> {
  if (!existsSync(SUITE)) throw new Error(`the conformance suite is not installed at ${SUITE} (npm ci)`);
  const flag = argv.indexOf("--scenarios");
  const scenarios = flag === -1 ? DEFAULT_SCENARIOS : (argv[flag + 1] ?? "").split(",").filter(Boolean);
  const { command, args } = tsxCommand(THIS_FILE, ["--client"]);
  const clientCommand = [command, ...args].join(" ");
  const results: ScenarioResult[] = [];
  for (const entry of scenarios) {
    const [scenario = "", specVersion = "2025-11-25"] = entry.split("@");
    const out = await mkdtemp(path.join(os.tmpdir(), "abridge-conformance-out-"));
    try {
      await run(
        process.execPath,
        [
          "--import",
          GLOB_SHIM,
          SUITE,
          "client",
          "--command",
          clientCommand,
          "--scenario",
          scenario,
          "--spec-version",
          specVersion,
          "--timeout",
          "120000",
          "-o",
          out,
        ],
        { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 },
      ).catch((err: unknown) => err);
      const checks = await readChecks(out);
      if (checks === undefined) throw new Error(`the suite wrote no checks for ${entry}`);
      const failing = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
      results.push({
        scenario,
        specVersion,
        passed: checks.filter((c) => c.status === "SUCCESS").length,
        failed: checks.filter((c) => c.status === "FAILURE").length,
        warnings: checks.filter((c) => c.status === "WARNING").length,
        problems: failing.map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ""}`),
      });
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }
  const passed = results.reduce((n, r) => n + r.passed, 0);
  const failed = results.reduce((n, r) => n + r.failed, 0);
  console.log(`conformance client: ${passed} passed, ${failed} failed`);
  return { suite: "conformance-next (0.2.0-alpha.12)", results };
}

function clientTable(r: ConformanceClientResult): string {
  const rows = r.results.map((x) => [`${x.scenario}`, x.specVersion, x.passed, x.failed, x.warnings]);
  return markdownTable(["scenario", "server revision", "checks passed", "failed", "warnings"], rows);
}

/** Each failing or warning check as a list item naming its scenario. */
function problemLines(r: ConformanceClientResult): string[] {
  return r.results.flatMap((x) => x.problems.map((p) => `- ${x.scenario}@${x.specVersion}: ${p}`));
}

/** Every check in the checks.json files under `dir` (one folder per scenario run). */
async function readChecks(dir: string): Promise<Check[] | undefined> {
  const found: Check[] = [];
  let any = false;
  for (const entry of await readdir(dir, { recursive: true })) {
    if (path.basename(entry) !== "checks.json") continue;
    any = true;
    found.push(...(JSON.parse(await readFile(path.join(dir, entry), "utf8")) as Check[]));
  }
  return any ? found : undefined;
}
