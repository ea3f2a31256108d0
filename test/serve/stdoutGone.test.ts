import { spawn } from "node:child_process";
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureServerToml, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { BIN } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("abridge serve when the client stops reading", () => {
  const temp = useTempDir({ marker: "epipe" });
  afterEach(async () => {
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  it("shuts down in order on EPIPE and ends its upstream children", async () => {
    const config = await writeConfig(temp.path, `cache_dir = "cache"\n${fixtureServerToml("slow", "slowServer.ts", ["--name", temp.marker])}`);
    const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config, "--log-level", "info"], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString("utf8")));
    const exited = once(child, "exit");
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } })}\n`,
    );
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
    // The client goes away without closing stdin: its read end of abridge's stdout is gone.
    child.stdout.destroy();
    for (let id = 2; id < 50; id++) child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list" })}\n`);
    const [code] = (await exited) as [number | null];
    expect(stderr).not.toContain("Unhandled");
    expect(stderr).not.toMatch(/^Error: write EPIPE/m);
    expect(code).toBe(0);
  });
});
