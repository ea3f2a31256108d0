import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureServerToml, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { BIN } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

/**
 * Runs the CLI as a real process, reads the first chunk of its stdout and then closes the pipe,
 * as `| head` does. The output is far larger than a pipe's buffer (64 KiB), so the CLI is still
 * writing when the reader goes away and its next write fails with EPIPE.
 */
async function readALittle(argv: string[]): Promise<{ code: number | null; signal: string | null; stderr: string; first: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", BIN, ...argv], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString("utf8")));
  const exited = once(child, "exit");
  const first = await new Promise<string>((resolve, reject) => {
    child.stdout.once("data", (b: Buffer) => resolve(b.toString("utf8")));
    child.once("exit", () => reject(new Error(`exited before writing anything: ${stderr}`)));
  });
  child.stdout.destroy();
  const [code, signal] = (await exited) as [number | null, string | null];
  return { code, signal, stderr, first };
}

describe("a closed stdout ends the command quietly", () => {
  const temp = useTempDir({ marker: "pipe" });
  afterEach(async () => {
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  it("abridge tools | head: no stack trace, exit 0, no child left", async () => {
    // 3,000 tools listed in full: about 200 KB of output.
    const config = await writeConfig(
      temp.path,
      `cache_dir = "cache"\n${fixtureServerToml("big", "echoServer.ts", ["--tools", "3000", "--page-size", "1000", "--name", temp.marker], "connect_timeout_ms = 120000")}`,
    );
    const r = await readALittle(["tools", "--config", config]);
    expect(r.first).toContain("big_");
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled|^\s+at /m);
    expect(r.stderr).toBe("");
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
  }, 60_000);

  it("abridge render --json | head: no stack trace, exit 0", async () => {
    const tools = Array.from({ length: 400 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool number ${i}. ${"It does a thing with the given value and returns the result. ".repeat(6)}`,
      inputSchema: { type: "object", properties: { value: { type: "string", description: "The value" } }, required: ["value"] },
    }));
    const input = path.join(temp.path, `${temp.marker}.json`);
    await writeFile(input, JSON.stringify({ tools }));
    const r = await readALittle(["render", "--input", input, "--mode", "full", "--json", "--cache-dir", path.join(temp.path, "cache")]);
    expect(r.first).toContain('{"tools":[');
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled|^\s+at /m);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  }, 60_000);
});
