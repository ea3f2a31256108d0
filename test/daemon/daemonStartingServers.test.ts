/**
 * Calls while some servers are still starting: a call to a ready server is answered at once, and
 * a call to a server that is still starting waits for it (up to its connect_timeout_ms), with the
 * client waiting longer than the daemon so the daemon's own error arrives.
 */
import { describe, expect, it } from "vitest";
import { DaemonClient } from "../../src/daemon/client/daemonClient.js";
import { isAbridgeError } from "../../src/model/errors.js";
import { fixtureServerToml } from "../helpers/cliHarness.js";
import { startDaemon, testSetup } from "./daemonHarness.js";

describe("a daemon with a server still starting", { timeout: 60_000 }, () => {
  it("calls a ready server while another still starts, and lets the daemon's own error arrive first", async () => {
    const setup = await testSetup();
    const servers = [
      fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--marker", setup.dir]),
      fixtureServerToml("hang", "hangServer.ts", ["--marker", setup.dir], "connect_timeout_ms = 8000"),
    ].join("\n");
    const hung = await testSetup(servers);
    const daemon = await startDaemon(hung);
    const client = new DaemonClient({ stateDir: hung.stateDir });
    try {
      expect(await client.callTool("echo", "echo", { text: "fast" })).toMatchObject({ content: [{ text: "fast" }] });
      // Answered before the hanging server's start has even timed out.
      expect(daemon.stats().upstreams.find((upstream) => upstream.name === "hang")?.state).toBe("connecting");
      // The daemon waits up to hang's connect_timeout_ms (8 s); the client, told a 1 s call
      // timeout, must wait for that rather than give up at 1 s + margin with DAEMON_UNAVAILABLE.
      const error = await client.callTool("hang", "anything", {}, { timeoutMs: 1_000 }).catch((err: unknown) => err);
      expect(isAbridgeError(error)).toBe(true);
      expect(["UPSTREAM_UNAVAILABLE", "UPSTREAM_TIMEOUT"]).toContain((error as { code: string }).code);
      // list_tools answers once every server has settled; hang failed, echo's tools are there.
      const tools = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("echo");
    } finally {
      client.close();
    }
  });
});
