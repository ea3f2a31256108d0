/**
 * SIGTERM stops `abridge serve` without dropping what it was asked before: a call in flight is
 * answered (within the grace the daemon also gives), over stdio and over HTTP, and then the process
 * exits and leaves no upstream behind.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureServerToml, tempDir, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { isAlive } from "../helpers/processes.js";
import { serveOverHttp, serveOverStdio } from "../helpers/serveHarness.js";
import { waitFor } from "../helpers/waitFor.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(): Promise<{ config: string; mark: string; marker: string }> {
  const { dir, cleanup } = await tempDir("abridge-sigterm-");
  cleanups.push(cleanup);
  const mark = path.join(dir, "call-arrived");
  const marker = `sigterm-${path.basename(dir)}`;
  const config = await writeConfig(dir, `mode = "full"\n${fixtureServerToml("host", "misbehavingServer.ts", ["--mark-file", mark, "--marker", marker])}`);
  return { config, mark, marker };
}

describe("serve: SIGTERM with calls in flight", () => {
  it("stdio: the call under way is answered, then abridge exits and its upstream is gone", async () => {
    const { config, mark, marker } = await setup();
    const session = await serveOverStdio(config);
    cleanups.push(() => session.close());
    const call = session.client.callTool({ name: "host_wait", arguments: { ms: 1500 } });
    await waitFor(() => existsSync(mark), { what: "the call to reach the upstream" });
    process.kill(session.pid!, "SIGTERM");
    const result = await call;
    expect(result.content).toEqual([{ type: "text", text: "waited 1500 ms" }]);
    await waitFor(() => !isAlive(session.pid!), { what: "abridge to exit" });
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
  });

  it("HTTP: the call under way is answered, then abridge exits", async () => {
    const { config, mark, marker } = await setup();
    const serve = await serveOverHttp(config);
    cleanups.push(() => serve.stop());
    const client = await serve.connect();
    const call = client.callTool({ name: "host_wait", arguments: { ms: 1500 } });
    await waitFor(() => existsSync(mark), { what: "the call to reach the upstream" });
    const exited = new Promise<number | null>((resolve) => serve.child.once("exit", (code) => resolve(code)));
    serve.child.kill("SIGTERM");
    const result = await call;
    expect(result.content).toEqual([{ type: "text", text: "waited 1500 ms" }]);
    expect(await exited).toBe(0);
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
  });
});
