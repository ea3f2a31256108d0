/**
 * The official MCP Inspector CLI (@modelcontextprotocol/inspector, `--cli`) drives `abridge serve`
 * over stdio (the inspector spawns abridge, which spawns the conformance fixture) and over
 * streamable HTTP (abridge serve --http, the inspector connecting to its URL). Proves a
 * third-party client can list and call tools, read a resource and get a prompt through abridge,
 * and that nothing is left running once the inspector is done.
 *
 * Not part of `npm test`: the inspector needs Node >= 22 by its package metadata (it runs on 20,
 * but `npm ci` would warn every user about it), so it is not a dependency. CI runs this file, which
 * fetches the pinned version with `npx`:
 *
 *   npx tsx test/clients/inspectorCheck.ts
 *
 * Prints one line per check and ends with `inspector: N passed, N failed`; exits 1 on a failure.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { fixtureServerToml, pidsWithMarker, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { killAll } from "../helpers/processes.js";
import { BIN } from "../helpers/serveHarness.js";
import { waitFor } from "../helpers/waitFor.js";
import { messageOf } from "../../src/model/errors.js";

/** The version every check was written against; newer ones are checked when this is bumped. */
export const INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector@2.12.0";

const run = promisify(execFile);
const REPO = fileURLToPath(new URL("../../", import.meta.url));

interface Listed {
  tools: { name: string; description?: string; inputSchema: Record<string, unknown> }[];
}
interface Called {
  content: { type: string; text?: string }[];
  isError?: boolean;
}

async function main(): Promise<number> {
  const { dir, cleanup } = await tempDir("abridge-inspector-");
  // A unique argument on the fixture's command line finds its process (and proves it ended).
  const marker = `inspector-${randomUUID()}`;
  const config = await writeConfig(dir, fixtureServerToml("conf", "conformanceServer.ts", ["--marker", marker]));

  /** Node's arguments for `abridge serve` in `mode` on the test config, with its cache in `cacheDir` under the test's folder. */
  const serveArgs = (cacheDir: string, mode: string): string[] => [
    "--import",
    "tsx",
    BIN,
    "serve",
    "--config",
    config,
    "--cache-dir",
    path.join(dir, cacheDir),
    "--no-watch",
    "--mode",
    mode,
  ];

  /** Runs the inspector CLI with `args`; abridge goes after `--` so its `--config` is not the inspector's. */
  const inspect = async (args: string[], mode: string): Promise<unknown> => {
    const abridge = [process.execPath, ...serveArgs("cache", mode)];
    const { stdout } = await run("npx", ["-y", INSPECTOR_PACKAGE, "--cli", ...args, "--", ...abridge], {
      cwd: REPO,
      env: { ...process.env, HOME: process.env.HOME ?? dir },
      timeout: 180_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return JSON.parse(stdout) as unknown;
  };

  /** `abridge serve --http 127.0.0.1:0` in full mode, resolved once it prints its URL. */
  let httpServe: ChildProcess | undefined;
  const serveHttp = async (): Promise<string> => {
    const child = spawn(process.execPath, [...serveArgs("cache-http", "full"), "--http", "127.0.0.1:0"], {
      cwd: REPO,
      stdio: ["ignore", "ignore", "pipe"],
    });
    httpServe = child;
    return new Promise<string>((resolve, reject) => {
      let text = "";
      const timer = setTimeout(() => reject(new Error(`serve --http printed no URL: ${text.slice(-300)}`)), 120_000);
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (chunk: string) => {
        text += chunk;
        const match = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(text);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      child.once("exit", (code) => reject(new Error(`serve --http exited (${code}): ${text.slice(-300)}`)));
    });
  };
  const stopHttp = async (): Promise<void> => {
    const child = httpServe;
    httpServe = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  /** Runs the inspector CLI against a streamable HTTP URL. */
  const inspectUrl = async (url: string, args: string[]): Promise<unknown> => {
    const { stdout } = await run("npx", ["-y", INSPECTOR_PACKAGE, "--cli", url, "--transport", "http", ...args], {
      cwd: REPO,
      env: { ...process.env, HOME: process.env.HOME ?? dir },
      timeout: 180_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return JSON.parse(stdout) as unknown;
  };

  const checks: [string, () => Promise<void>][] = [
    [
      "lists the tools in full mode, $defs intact",
      async () => {
        const full = (await inspect(["--method", "tools/list"], "full")) as Listed;
        const schemaTool = full.tools.find((t) => t.name === "conf_json_schema_2020_12_tool");
        assert.ok(schemaTool?.inputSchema.$defs !== undefined, "the 2020-12 tool keeps its $defs");
        assert.ok(full.tools.some((t) => t.name === "conf_test_simple_text"));
        assert.ok(!full.tools.some((t) => t.name === "get_schema"), "no get_schema in full mode");
      },
    ],
    [
      "lists the tools in compact mode with get_schema and a description for each",
      async () => {
        const compact = (await inspect(["--method", "tools/list"], "compact")) as Listed;
        const names = compact.tools.map((t) => t.name);
        for (const name of ["get_schema", "conf_test_simple_text", "conf_test_sampling"]) assert.ok(names.includes(name), name);
        assert.ok(compact.tools.every((t) => typeof t.description === "string" && t.description.length > 0));
      },
    ],
    [
      "calls a tool with arguments in compact mode (validated against the full schema)",
      async () => {
        const called = (await inspect(
          ["--method", "tools/call", "--tool-name", "conf_json_schema_2020_12_tool", "--tool-arg", "name=Ada"],
          "compact",
        )) as Called;
        assert.notEqual(called.isError, true);
        assert.equal(called.content[0]?.text, 'Received: {"name":"Ada"}');
      },
    ],
    [
      "calls a tool without arguments in full mode",
      async () => {
        const simple = (await inspect(["--method", "tools/call", "--tool-name", "conf_test_simple_text"], "full")) as Called;
        assert.deepEqual(simple.content, [{ type: "text", text: "This is a simple text response for testing." }]);
      },
    ],
    [
      "reads a resource and gets a prompt",
      async () => {
        const read = (await inspect(["--method", "resources/read", "--uri", "test://static-text"], "compact")) as { contents: { text?: string }[] };
        assert.equal(read.contents[0]?.text, "This is the content of the static text resource.");
        const prompt = (await inspect(
          ["--method", "prompts/get", "--prompt-name", "conf_test_prompt_with_arguments", "--prompt-args", "arg1=hello", "arg2=world"],
          "compact",
        )) as {
          messages: { content: { text?: string } }[];
        };
        assert.equal(prompt.messages[0]?.content.text, "Prompt with arguments: arg1='hello', arg2='world'");
      },
    ],
    [
      "over streamable HTTP: lists the tools, calls one, reads a resource",
      async () => {
        const url = await serveHttp();
        try {
          const listed = (await inspectUrl(url, ["--method", "tools/list"])) as Listed;
          assert.ok(listed.tools.some((t) => t.name === "conf_test_simple_text"));
          const simple = (await inspectUrl(url, ["--method", "tools/call", "--tool-name", "conf_test_simple_text"])) as Called;
          assert.deepEqual(simple.content, [{ type: "text", text: "This is a simple text response for testing." }]);
          const withArgs = (await inspectUrl(url, [
            "--method",
            "tools/call",
            "--tool-name",
            "conf_json_schema_2020_12_tool",
            "--tool-arg",
            "name=Ada",
          ])) as Called;
          assert.equal(withArgs.content[0]?.text, 'Received: {"name":"Ada"}');
          const read = (await inspectUrl(url, ["--method", "resources/read", "--uri", "test://static-text"])) as { contents: { text?: string }[] };
          assert.equal(read.contents[0]?.text, "This is the content of the static text resource.");
        } finally {
          await stopHttp();
        }
      },
    ],
    [
      "leaves no abridge and no upstream running after the inspector exits",
      async () => {
        // Only /proc shows which processes are left: polled, then what is left is reported.
        await waitFor(() => pidsWithMarker(marker).length === 0 && pidsWithMarker(config).length === 0, {
          what: "abridge and its upstreams to exit",
          timeoutMs: 15_000,
          intervalMs: 100,
        }).catch(() => undefined);
        assert.deepEqual(pidsWithMarker(marker), [], "fixture processes left");
        assert.deepEqual(pidsWithMarker(config), [], "abridge processes left");
      },
    ],
  ];

  let passed = 0;
  let failed = 0;
  try {
    for (const [name, check] of checks) {
      try {
        await check();
        passed += 1;
        console.log(`ok    ${name}`);
      } catch (err) {
        failed += 1;
        console.log(`FAIL  ${name}: ${messageOf(err)}`);
      }
    }
  } finally {
    await stopHttp();
    killAll(pidsWithMarker(marker));
    killAll(pidsWithMarker(config));
    await cleanup();
  }
  console.log(`inspector: ${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main();
