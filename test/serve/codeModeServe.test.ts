/**
 * Code mode served: `abridge serve` (a child process) with `mode = "code"` in the config or
 * `--mode code`, over stdio and streamable HTTP, driven by the SDK client. The list holds exactly
 * search_tools and run_code; a client's notifications/cancelled ends its run and aborts the run's
 * call at the upstream; runs of two clients at once each get their own console and return value.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { serveOverHttp, serveOverStdio, type HttpServeProcess, type ServeSession } from "../helpers/serveHarness.js";
import { waitFor } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

type Text = { type: string; text: string };

function text(result: Record<string, unknown>): string {
  return (result.content as Text[]).map((c) => c.text).join("\n");
}

/** Every audit record so far. */
async function auditLines(file: string): Promise<Record<string, unknown>[]> {
  const lines = (await readFile(file, "utf8").catch(() => "")).trim().split("\n").filter(Boolean);
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The first audit record of a run's call with `outcome`, once there is one. */
async function auditOf(file: string, outcome: string): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined;
  await waitFor(
    async () => {
      const lines = (await readFile(file, "utf8").catch(() => "")).trim().split("\n").filter(Boolean);
      found = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.outcome === outcome && typeof r.run === "string");
      return found !== undefined;
    },
    { what: `an audit record of a run's call with outcome ${outcome}` },
  );
  return found!;
}

/** What every front end must do in code mode, given a way to get clients of one abridge. */
async function checkCodeMode(clients: () => Promise<Client>, stderr: { untilStderr: ServeSession["untilStderr"] }, audit: string): Promise<void> {
  const client = await clients();
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toEqual(["search_tools", "run_code"]);

  const declared = text(await client.callTool({ name: "search_tools", arguments: { query: "add two numbers" } }));
  expect(declared).toContain("declare namespace echo {");
  expect(declared).toContain("function add(args: { a: number; b: number }): Promise<{ sum: number }>;");
  const byName = text(await client.callTool({ name: "search_tools", arguments: { names: ["slow.sleep"] } }));
  expect(byName).toContain("declare namespace slow {");

  const ran = await client.callTool({
    name: "run_code",
    arguments: { code: 'const r = await echo.add({ a: 2, b: 3 });\nconsole.log("sum", r.sum);\nreturn r;' },
  });
  expect(ran.isError).toBeUndefined();
  expect(text(ran)).toMatch(/^\[log\] sum 5\n\{"sum":5\}\n\(1 call, \d+ ms\)$/);

  // Cancelled by the client: the run ends, its call at the upstream is aborted (the slow fixture
  // says so on stderr, which serve passes on), and the call is audited as cancelled with the run.
  const controller = new AbortController();
  // Were the run to go on past the cancel, it would call echo.add once its sleep failed.
  const code = "try { await slow.sleep({ ms: 60000 }); } catch {}\nawait echo.add({ a: 1, b: 1 });\nreturn 1;";
  const cancelled = client.callTool({ name: "run_code", arguments: { code } }, undefined, { signal: controller.signal }).catch((err: unknown) => err);
  await stderr.untilStderr(/sleeping \d+/, "the program's call at the slow fixture");
  controller.abort("stop");
  expect(await cancelled).toBeInstanceOf(Error);
  await stderr.untilStderr(/cancelled \d+/, "the slow fixture to see its call cancelled");
  const record = await auditOf(audit, "cancelled");
  expect(record).toMatchObject({ server: "slow", tool: "sleep", errorCode: "CANCELLED" });
  // A run after it, audited after it: the cancelled run made no call past its sleep.
  await client.callTool({ name: "run_code", arguments: { code: 'await echo.echo({ text: "barrier" }); return 0;' } });
  // (No run called echo_echo before this one.)
  await waitFor(async () => (await auditLines(audit)).some((r) => r.tool === "echo" && typeof r.run === "string"), {
    what: "the later run's call in the audit log",
  });
  expect((await auditLines(audit)).filter((r) => r.run === record.run).map((r) => r.tool)).toEqual(["sleep"]);

  // Two clients' runs at once: each gets its own console and return value. Run a's call holds at
  // the slow fixture until b has been answered, so the two runs overlap.
  const gate = path.join(path.dirname(audit), "gate-a");
  const other = await clients();
  const running = client.callTool({
    name: "run_code",
    arguments: { code: `console.log("mine: a"); await slow.sleep({ gate: ${JSON.stringify(gate)} }); return "a";` },
  });
  // The cancelled run above wrote the first "sleeping" line: run a's call writes the second.
  await stderr.untilStderr(/sleeping \d+[\s\S]*sleeping \d+/, "run a's call at the slow fixture");
  const b = await other.callTool({ name: "run_code", arguments: { code: 'console.log("mine: b"); await echo.echo({ text: "x" }); return "b";' } });
  await writeFile(gate, "");
  const a = await running;
  expect(text(a)).toMatch(/^\[log\] mine: a\n"a"\n\(1 call, \d+ ms\)$/);
  expect(text(b)).toMatch(/^\[log\] mine: b\n"b"\n\(1 call, \d+ ms\)$/);
}

describe("code mode served", () => {
  const temp = useTempDir({ marker: "code-serve" });
  let audit: string;
  let config: (mode?: string) => Promise<string>;
  let sessions: ServeSession[];
  let http: HttpServeProcess | undefined;
  beforeEach(async () => {
    audit = path.join(temp.path, "audit.jsonl");
    sessions = [];
    config = (mode) =>
      writeConfig(
        temp.path,
        [
          ...(mode !== undefined ? [`mode = "${mode}"`] : []),
          `cache_dir = "cache"`,
          `audit_log = "audit.jsonl"`,
          fixtureServerToml("echo", "echoServer.ts", ["--tools", "2", "--name", temp.marker]),
          fixtureServerToml("slow", "slowServer.ts", ["--marker", temp.marker]),
        ].join("\n"),
      );
  });
  afterEach(async () => {
    for (const session of sessions) await session.close();
    await http?.stop();
    http = undefined;
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  it('over stdio, with mode = "code" in the config', async () => {
    const file = await config("code");
    let first: ServeSession | undefined;
    await checkCodeMode(
      async () => {
        const session = await serveOverStdio(file, [], { ABRIDGE_LOG_LEVEL: "debug" });
        sessions.push(session);
        first ??= session;
        return session.client;
      },
      { untilStderr: (t, w, ms) => first!.untilStderr(t, w, ms) },
      audit,
    );
  });

  it("over HTTP, with --mode code over a compact config: two sessions of one abridge", async () => {
    const file = await config();
    http = await serveOverHttp(file, ["--mode", "code"], { ABRIDGE_LOG_LEVEL: "debug" });
    const served = http;
    await checkCodeMode(() => served.connect(), served, audit);
  });
});
