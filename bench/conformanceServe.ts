/**
 * What both conformance drivers (conformance.ts for the suite's 0.1 line, conformanceNext.ts for
 * its 0.2 line) share: the config of `abridge serve` in front of the conformance fixture, and
 * starting `abridge serve --http 127.0.0.1:0` on it.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { CLI_BIN, tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { killGroup, spawnGroup } from "./mcpTarget.js";

/** The upstream every conformance run sits in front of. */
export const FIXTURE = path.join(REPO_ROOT, "test", "fixtures", "conformanceServer.ts");

/**
 * Writes `abridge.toml` in `dir`: the fixture with `prefix = false`, so that the tools keep the
 * names the suite calls. Returns its path.
 */
export async function writeFixtureConfig(dir: string): Promise<string> {
  const { command, args } = tsxCommand(FIXTURE);
  const config = path.join(dir, "abridge.toml");
  await writeFile(
    config,
    [
      'log_level = "error"',
      "",
      "[servers.conformance]",
      `command = ${JSON.stringify(command)}`,
      `args = ${JSON.stringify(args)}`,
      "prefix = false",
      "connect_timeout_ms = 120000",
      "",
    ].join("\n"),
  );
  return config;
}

/** Starts `abridge serve --http 127.0.0.1:0` and resolves with its URL and a stop function. */
export async function startServe(
  config: string,
  cacheDir: string,
  mode: string,
): Promise<{ url: string; pid: number | undefined; stop: () => Promise<void>; stderr: () => string }> {
  const { command, args } = tsxCommand(CLI_BIN, ["serve", "--config", config, "--cache-dir", cacheDir, "--no-watch", "--mode", mode, "--http", "127.0.0.1:0"]);
  const child = spawnGroup(command, args, REPO_ROOT);
  let text = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    // Bounded: a long run must not keep every log line.
    text = (text + chunk).slice(-20_000);
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`abridge serve printed no URL within 120 s:\n${text.slice(-2000)}`)), 120_000);
      const onData = (): void => {
        const match = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(text);
        if (match?.[1]) {
          clearTimeout(timer);
          child.stderr?.off("data", onData);
          resolve(match[1]);
        }
      };
      child.stderr?.on("data", onData);
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`abridge serve exited (${code}) before listening:\n${text.slice(-2000)}`));
      });
    });
    return { url, pid: child.pid, stop: () => killGroup(child), stderr: () => text };
  } catch (err) {
    await killGroup(child);
    throw err;
  }
}
