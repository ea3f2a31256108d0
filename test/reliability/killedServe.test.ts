/**
 * `kill -9` of `abridge serve` runs none of its handlers: an upstream that ignores the end of its
 * stdin and SIGTERM used to live on as an orphan. Each stdio server now runs in its own process
 * group, watched from outside abridge: when abridge dies, however, the group is ended.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureServerToml, writeConfig } from "../helpers/cliHarness.js";
import { isAlive } from "../helpers/processes.js";
import { BIN } from "../helpers/serveHarness.js";
import { waitFor } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir({ prefix: "abridge-kill9-" });
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone already.
  }
}

describe("kill -9 of serve", () => {
  it("an upstream that ignores EOF and SIGTERM does not outlive abridge", async () => {
    const pidFile = path.join(temp.path, "upstream.pid");
    const config = await writeConfig(temp.path, fixtureServerToml("immortal", "misbehavingServer.ts", ["--immortal", "--pid-file", pidFile]));
    const serve = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
      stdio: ["pipe", "pipe", "ignore"],
    });
    cleanups.push(() => killQuietly(serve.pid!));
    let out = "";
    serve.stdout.on("data", (b: Buffer) => (out += b.toString("utf8")));
    // An answered initialize: abridge is up and has started its upstream.
    serve.stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } })}\n`,
    );
    await waitFor(() => out.includes('"id":1') && existsSync(pidFile), { what: "abridge and its upstream to start", timeoutMs: 60_000 });
    const upstream = Number(readFileSync(pidFile, "utf8"));
    cleanups.push(() => killQuietly(upstream));
    expect(isAlive(upstream)).toBe(true);

    const exited = new Promise<void>((resolve) => serve.once("exit", () => resolve()));
    serve.kill("SIGKILL");
    await exited;
    // The watchdog sends SIGTERM (ignored), then SIGKILL two seconds later.
    await waitFor(() => !isAlive(upstream), { what: "the orphaned upstream to be ended" });
  });
});
