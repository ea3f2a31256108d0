/**
 * The official MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0, `--cli`) drives
 * `abridge serve` over stdio: the inspector spawns abridge, which spawns the conformance fixture.
 * Proves a third-party client can list and call tools through abridge, and that nothing is left
 * running once the inspector is done.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { killAll } from "../helpers/processes.js";
import { BIN } from "../helpers/serveHarness.js";

const run = promisify(execFile);
const REPO = fileURLToPath(new URL("../../", import.meta.url));
const INSPECTOR = path.join(REPO, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js");

interface Listed {
  tools: { name: string; description?: string; inputSchema: Record<string, unknown> }[];
}
interface Called {
  content: { type: string; text?: string }[];
  isError?: boolean;
}

describe("mcp-inspector --cli against abridge serve", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let marker: string;
  let config: string;

  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    // A unique argument on the fixture's command line finds its process (and proves it ended).
    marker = `inspector-${randomUUID()}`;
    config = await writeConfig(dir, fixtureServerToml("conf", "conformanceServer.ts", ["--marker", marker]));
  });

  afterEach(async () => {
    killAll(pidsWithMarker(marker));
    killAll(pidsWithMarker(config));
    await cleanup();
  });

  /** Runs the inspector CLI with `args`; abridge goes after `--` so its `--config` is not the inspector's. */
  async function inspect(args: string[], mode: string): Promise<unknown> {
    const { stdout } = await run(
      process.execPath,
      [INSPECTOR, "--cli", ...args, "--", process.execPath, "--import", "tsx", BIN, "serve", "--config", config, "--cache-dir", path.join(dir, "cache"), "--no-watch", "--mode", mode],
      { cwd: REPO, env: { PATH: process.env.PATH ?? "", HOME: dir }, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
    );
    return JSON.parse(stdout) as unknown;
  }

  it("is installed where the test expects it", () => {
    expect(existsSync(INSPECTOR), INSPECTOR).toBe(true);
  });

  it("lists the tools in full and compact mode and calls one with arguments", async () => {
    const full = (await inspect(["--method", "tools/list"], "full")) as Listed;
    const schemaTool = full.tools.find((t) => t.name === "conf_json_schema_2020_12_tool");
    expect(schemaTool?.inputSchema.$defs).toBeDefined();
    expect(full.tools.map((t) => t.name)).toContain("conf_test_simple_text");
    expect(full.tools.map((t) => t.name)).not.toContain("get_schema");

    const compact = (await inspect(["--method", "tools/list"], "compact")) as Listed;
    expect(compact.tools.map((t) => t.name)).toEqual(expect.arrayContaining(["get_schema", "conf_test_simple_text", "conf_test_sampling"]));
    expect(compact.tools.every((t) => typeof t.description === "string" && t.description.length > 0)).toBe(true);

    const called = (await inspect(["--method", "tools/call", "--tool-name", "conf_json_schema_2020_12_tool", "--tool-arg", "name=Ada"], "compact")) as Called;
    expect(called.isError).not.toBe(true);
    expect(called.content[0]?.text).toBe('Received: {"name":"Ada"}');

    const simple = (await inspect(["--method", "tools/call", "--tool-name", "conf_test_simple_text"], "full")) as Called;
    expect(simple.content).toEqual([{ type: "text", text: "This is a simple text response for testing." }]);

    // The inspector closed abridge's stdin; abridge and the fixture it started are gone.
    await expect.poll(() => pidsWithMarker(marker), { timeout: 15_000 }).toEqual([]);
    await expect.poll(() => pidsWithMarker(config), { timeout: 15_000 }).toEqual([]);
  });

  it("reads a resource and gets a prompt through abridge", async () => {
    const read = (await inspect(["--method", "resources/read", "--uri", "test://static-text"], "compact")) as { contents: { text?: string }[] };
    expect(read.contents[0]?.text).toBe("This is the content of the static text resource.");
    const prompt = (await inspect(["--method", "prompts/get", "--prompt-name", "conf_test_prompt_with_arguments", "--prompt-args", "arg1=hello", "arg2=world"], "compact")) as {
      messages: { content: { text?: string } }[];
    };
    expect(prompt.messages[0]?.content.text).toBe("Prompt with arguments: arg1='hello', arg2='world'");
  });
});
