import { readFile } from "node:fs/promises";
import path from "node:path";
import { createRequire } from "node:module";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cacheEntrySchema } from "../../src/cache/cacheEntry.js";
import { ExitCode } from "../../src/cli/command.js";
import { fixtureServerToml, pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { startFakeOpenAi, type FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { useTempDir } from "../helpers/tempDir.js";

const require = createRequire(import.meta.url);
const everythingBin = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

/** One row of the printed warm table; counts are undefined where the row shows "-". */
interface PrintedRow {
  label: string;
  tools: number | undefined;
  hits: number | undefined;
  generated: number | undefined;
  fallback: number | undefined;
  full: number;
  compact: number;
  note: string;
}

/** What `summarize warm` printed: the table's rows, its total row, the "all modes" line and the summarizer footer. */
interface PrintedWarm {
  rows: PrintedRow[];
  total: PrintedRow;
  allModes: { full: number; compact: number };
  footer: { summarizer: string; requests: number; generated: number; fallback: number; causes: string; retries: number };
}

const number = (text: string): number => Number(text.replaceAll(",", ""));
const countCell = (text: string): number | undefined => (text === "-" ? undefined : number(text));

/** Reads the warm table back, cutting each line at the columns its rule line of dashes marks. */
function parseWarm(stdout: string): PrintedWarm {
  const lines = stdout.split("\n");
  const header = lines.findIndex((l) => /^server\s+tools\s+hits\s+generated\s+fallback\s+tokens full -> compact\s+share\s+note$/.test(l));
  expect(header, stdout).toBeGreaterThanOrEqual(0);
  const spans: Array<[number, number]> = [];
  for (const m of lines[header + 1]!.matchAll(/-+/g)) spans.push([m.index, m.index + m[0].length]);
  expect(spans).toHaveLength(8);
  const rows: PrintedRow[] = [];
  for (const line of lines.slice(header + 2)) {
    if (line.startsWith("all modes")) break;
    const cell = (i: number): string => line.slice(spans[i]![0], i === 7 ? undefined : spans[i]![1]).trim();
    const tokens = /^([\d,-]+) -> ([\d,-]+)$/.exec(cell(5));
    expect(tokens, line).not.toBeNull();
    rows.push({
      label: cell(0),
      tools: countCell(cell(1)),
      hits: countCell(cell(2)),
      generated: countCell(cell(3)),
      fallback: countCell(cell(4)),
      full: number(tokens![1]!),
      compact: number(tokens![2]!),
      note: cell(7),
    });
  }
  const total = rows.pop();
  expect(total?.label).toBe("total");
  const modes = /^all modes \(o200k tokens of the tool list\): full ([\d,]+), .* compact ([\d,]+) /m.exec(stdout);
  expect(modes, stdout).not.toBeNull();
  const footer = /^summarizer (\S+): ([\d,]+) requests, ([\d,]+) generated, ([\d,]+) fell back to extractive(?: \(([^)]*)\))?, ([\d,]+) retries/m.exec(stdout);
  expect(footer, stdout).not.toBeNull();
  return {
    rows,
    total: total!,
    allModes: { full: number(modes![1]!), compact: number(modes![2]!) },
    footer: {
      summarizer: footer![1]!,
      requests: number(footer![2]!),
      generated: number(footer![3]!),
      fallback: number(footer![4]!),
      causes: footer![5] ?? "",
      retries: number(footer![6]!),
    },
  };
}

/**
 * The table says one thing: the total row is the sum of the rows above it, column by column; it is
 * the list measured as a whole; and the footer's generated and fallback counts are the rows'.
 */
function expectConsistent(printed: PrintedWarm): void {
  const sum = (pick: (r: PrintedRow) => number | undefined): number => printed.rows.reduce((n, r) => n + (pick(r) ?? 0), 0);
  expect({
    tools: printed.total.tools,
    hits: printed.total.hits,
    generated: printed.total.generated,
    fallback: printed.total.fallback,
    full: printed.total.full,
    compact: printed.total.compact,
  }).toEqual({
    tools: sum((r) => r.tools),
    hits: sum((r) => r.hits),
    generated: sum((r) => r.generated),
    fallback: sum((r) => r.fallback),
    full: sum((r) => r.full),
    compact: sum((r) => r.compact),
  });
  expect({ full: printed.total.full, compact: printed.total.compact }).toEqual(printed.allModes);
  expect(printed.footer.generated).toBe(printed.total.generated);
  expect(printed.footer.fallback).toBe(printed.total.fallback);
  // The tokens of no single server: get_schema is listed in compact mode only.
  const shared = printed.rows.find((r) => r.label === "(shared)");
  expect(shared?.note).toContain("get_schema");
  expect(shared!.compact).toBeGreaterThan(shared!.full);
}

async function cacheLines(dir: string): Promise<unknown[]> {
  const text = await readFile(path.join(dir, "cache", "summaries.jsonl"), "utf8");
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as unknown);
}

describe("abridge summarize warm (end to end)", () => {
  const temp = useTempDir({ marker: "warm" });
  afterEach(async () => {
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("fills every summary from a fixture and a published server, and the second run makes no summarizer call", async () => {
    const config = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "6", "--name", temp.marker]),
        `[servers.everything]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(everythingBin)}, "stdio", ${JSON.stringify(temp.marker)}]\n`,
      ].join("\n"),
    );
    const first = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(first.stderr).not.toContain("failed");
    expect(first.code).toBe(0);
    const rows = first.stdout.split("\n");
    const echoRow = rows.find((l) => l.startsWith("echo "));
    const everythingRow = rows.find((l) => l.startsWith("everything "));
    // echo: 2 + 6 generated tools, all generated on the first run, none from the cache.
    expect(echoRow?.split(/\s+/).slice(1, 5)).toEqual(["8", "0", "8", "0"]);
    expect(everythingRow).toBeDefined();
    const everythingTools = Number(everythingRow!.split(/\s+/)[1]);
    expect(everythingTools).toBeGreaterThan(5);
    const printed = parseWarm(first.stdout);
    expectConsistent(printed);
    expect(printed.footer).toMatchObject({ summarizer: "extractive@3", fallback: 0 });
    expect(printed.footer.generated).toBe(printed.total.tools);

    const lines = await cacheLines(temp.path);
    expect(lines).toHaveLength(8 + everythingTools);
    for (const line of lines) expect(cacheEntrySchema.safeParse(line).success).toBe(true);

    const second = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("summarizer extractive@3: 0 requests, 0 generated");
    expectConsistent(parseWarm(second.stdout));
    const echoAgain = second.stdout.split("\n").find((l) => l.startsWith("echo "));
    expect(echoAgain?.split(/\s+/).slice(1, 5)).toEqual(["8", "8", "0", "0"]);
    expect(await cacheLines(temp.path)).toHaveLength(lines.length);

    // --force redoes every tool; --server limits it to one.
    const forced = await runAbridge(["summarize", "warm", "--config", config, "--server", "echo", "--force"], { cwd: temp.path });
    expect(forced.code).toBe(0);
    expect(
      forced.stdout
        .split("\n")
        .find((l) => l.startsWith("echo "))
        ?.split(/\s+/)
        .slice(1, 5),
    ).toEqual(["8", "8", "8", "0"]);
    expect(forced.stdout).not.toMatch(/^everything /m);

    const status = await runAbridge(["summarize", "status", "--config", config, "--json"], { cwd: temp.path });
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as { servers: { server: string; tools: number; cached: number; missing: number }[] };
    expect(report.servers.find((s) => s.server === "echo")).toMatchObject({ tools: 8, cached: 8, missing: 0 });
  });

  it("redoes entries of another summarizer with --stale", async () => {
    const config = await writeConfig(
      temp.path,
      [`cache_dir = "cache"`, fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", temp.marker])].join("\n"),
    );
    expect((await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path })).code).toBe(0);
    // Rewrite every entry as if another summarizer had made it.
    const file = path.join(temp.path, "cache", "summaries.jsonl");
    const written = await readFile(file, "utf8");
    const rewrite = (by: string): Promise<void> =>
      import("node:fs/promises").then((fs) => fs.writeFile(file, written.replaceAll('"summarizer":"extractive@3"', `"summarizer":"${by}"`)));
    await rewrite("openai:some-model");
    const plain = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(plain.stdout).toContain("0 generated");
    const stale = await runAbridge(["summarize", "warm", "--config", config, "--stale"], { cwd: temp.path });
    expect(stale.code).toBe(0);
    expect(stale.stdout).toContain("3 generated");
    // An older version of the summarizer in use is redone without --stale.
    await rewrite("extractive@0");
    const older = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(older.stdout).toContain("3 generated");
  });

  it("reports a server that fails to start, warms the others, and exits 1", async () => {
    const config = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", temp.marker]),
        `[servers.broken]\ncommand = "/nonexistent/abridge-no-such-binary"\nconnect_timeout_ms = 5000\n`,
      ].join("\n"),
    );
    const r = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^broken\s+0\s.*failed/m);
    expect(r.stdout).toMatch(/^echo\s+3\s+0\s+3\s+0/m);
    expectConsistent(parseWarm(r.stdout));
  });

  it("rejects an unknown --server with a suggestion and exit 2", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("echo", "echoServer.ts", ["--name", temp.marker]));
    const r = await runAbridge(["summarize", "warm", "--config", config, "--server", "ecko"], { cwd: temp.path });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no server "ecko"');
    expect(r.stderr).toContain('did you mean "echo"');
  });
});

describe("abridge summarize warm with an LLM summarizer", () => {
  const temp = useTempDir({ marker: "llm" });
  let llm: FakeOpenAi;
  beforeEach(async () => {
    llm = await startFakeOpenAi();
  });
  afterEach(async () => {
    await llm.close();
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  /** Two servers: echo with 2 + 3 tools, other with 2 + 1; `summary` lines go under `[summary]`. */
  const configWith = (summary: string[]): Promise<string> =>
    writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        ["[summary]", 'summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`, ...summary].join("\n"),
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "3", "--name", temp.marker]),
        fixtureServerToml("other", "echoServer.ts", ["--tools", "1", "--name", temp.marker]),
      ].join("\n"),
    );
  const serverRows = (printed: PrintedWarm): PrintedRow[] => printed.rows.filter((r) => r.label !== "(shared)");

  it("exits SUMMARIZER_FAILED when every call fails, with rows and footer saying fallback; --allow-fallback accepts it and --stale redoes it", async () => {
    llm.setDefault({ kind: "status", status: 500 });
    const config = await configWith(["max_retries = 1"]);
    const failed = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(failed.code).toBe(ExitCode.SUMMARIZER_FAILED);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toMatch(/every call to the summarizer openai:\S+ failed.*--allow-fallback.*\[SUMMARIZER_FAILED\]$/m);
    const printed = parseWarm(failed.stdout);
    expectConsistent(printed);
    expect(serverRows(printed).map((r) => r.label)).toEqual(["echo", "other"]);
    for (const row of serverRows(printed)) {
      expect(row.tools).toBeGreaterThan(0);
      // Nothing came from the LLM: every tool of the row is a fallback, none "generated".
      expect(row).toMatchObject({ hits: 0, generated: 0, fallback: row.tools });
    }
    expect(printed.footer.summarizer).toMatch(/^openai:/);
    expect(printed.footer.requests).toBe(llm.requests.length);
    expect(printed.footer.retries).toBeGreaterThan(0);
    expect(printed.footer.causes).toBe(`${printed.total.fallback} after a failed call`);
    expect(failed.stdout).toContain(`every summarizer call failed: all ${printed.total.fallback} summaries written are extractive`);
    const lines = await cacheLines(temp.path);
    expect(lines).toHaveLength(printed.total.tools!);
    for (const line of lines) expect(line).toMatchObject({ summarizer: "extractive@3", fallback: expect.stringContaining("500") });

    const accepted = await runAbridge(["summarize", "warm", "--config", config, "--force", "--allow-fallback"], { cwd: temp.path });
    expect(accepted.code).toBe(0);
    expect(accepted.stderr).not.toContain("[SUMMARIZER_FAILED]");
    const again = parseWarm(accepted.stdout);
    expectConsistent(again);
    expect(again.total).toMatchObject({ generated: 0, fallback: printed.total.tools });
    expect(accepted.stdout).toContain("every summarizer call failed");

    // The endpoint is back: --stale redoes the fallbacks, as the footer said.
    llm.setDefault({ kind: "ok" });
    const redone = await runAbridge(["summarize", "warm", "--config", config, "--stale"], { cwd: temp.path });
    expect(redone.code).toBe(0);
    const fixed = parseWarm(redone.stdout);
    expectConsistent(fixed);
    for (const row of serverRows(fixed)) expect(row).toMatchObject({ generated: row.tools, fallback: 0 });
    expect(redone.stdout).not.toContain("summarizer calls failed");
  });

  it("exits 0 when some calls fail, and the footer says how many summaries fell back", async () => {
    // One tool per request, one request at a time, no retries: exactly the first two tools fail.
    llm.script({ kind: "status", status: 500 }, { kind: "status", status: 500 });
    const config = await configWith(["batch_size = 1", "max_concurrency = 1", "max_retries = 0"]);
    const r = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("[SUMMARIZER_FAILED]");
    const printed = parseWarm(r.stdout);
    expectConsistent(printed);
    const failedRequests = llm.requests.filter((q) => q.behaviour === "status").length;
    expect(failedRequests).toBe(2);
    expect(printed.total.fallback).toBe(failedRequests);
    expect(printed.total.generated).toBe(printed.total.tools! - failedRequests);
    expect(printed.footer.requests).toBe(llm.requests.length);
    expect(printed.footer.causes).toBe(`${failedRequests} after a failed call`);
    for (const row of serverRows(printed)) expect(row.generated! + row.fallback!).toBe(row.tools);
    expect(r.stdout).toContain(`some summarizer calls failed: ${failedRequests} of ${printed.total.tools} summaries written are extractive instead`);
  });

  it("counts every summary the LLM wrote as generated when every call succeeds", async () => {
    const config = await configWith(["batch_size = 2"]);
    const r = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(0);
    const printed = parseWarm(r.stdout);
    expectConsistent(printed);
    for (const row of serverRows(printed)) expect(row).toMatchObject({ hits: 0, generated: row.tools, fallback: 0 });
    const sent = llm.requests.reduce((n, q) => n + q.tools.length, 0);
    expect(printed.total.generated).toBe(sent);
    expect(printed.footer).toMatchObject({ requests: llm.requests.length, fallback: 0, causes: "", retries: 0 });
    expect(r.stdout).not.toContain("summarizer call");
    const lines = await cacheLines(temp.path);
    expect(lines).toHaveLength(printed.total.tools!);
    for (const line of lines) expect(line).toMatchObject({ summarizer: expect.stringMatching(/^openai:/) });
    for (const line of lines) expect(line).not.toHaveProperty("fallback");
  });
});
