/**
 * Paging a spilled output through the daemon: a cut `call_tool` result names a handle, the
 * `read_output` op (and DaemonClient.readOutput) reads the rest page by page, and a bad handle,
 * a bad request or spill being off get clear answers.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DaemonClient } from "../../src/daemon/client/daemonClient.js";
import type { CallToolResult } from "../../src/model/types.js";
import { fixtureServerToml } from "../helpers/cliHarness.js";
import { RawClient, startDaemon, testSetup } from "./daemonHarness.js";

const clients: DaemonClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

const texts = (result: CallToolResult): string[] => (result.content as { text: string }[]).map((b) => b.text);
/** The `{handle, offset}` a cut result or a page tells to read on with, if any. */
function nextOf(result: CallToolResult): { handle: string; offset: number } | undefined {
  const match = /read_output with (\{.*?\})/.exec(texts(result).join("\n"));
  return match ? (JSON.parse(match[1]!) as { handle: string; offset: number }) : undefined;
}

describe("daemon read_output", () => {
  it("reads a spilled output back page by page through DaemonClient.readOutput", async () => {
    const setup = await testSetup([fixtureServerToml("keep", "annotatedServer.ts", [], "max_output_bytes = 1000\nspill = true")].join("\n"), 'mode = "full"');
    await startDaemon(setup);
    const client = new DaemonClient({ stateDir: setup.stateDir });
    clients.push(client);
    const cut = await client.callTool("keep", "big", { bytes: 400, blocks: 5 });
    let next = nextOf(cut);
    expect(next).toBeDefined();
    let rest = "";
    for (let page = 0; next && page < 10; page++) {
      const result = await client.readOutput(next.handle, next.offset);
      expect(result.isError).toBeUndefined();
      expect(result._meta).toMatchObject({ "abridge/trust": "untrusted-tool-output" });
      rest += texts(result)[0];
      next = nextOf(result);
    }
    expect(next).toBeUndefined();
    expect(rest).toBe(["2", "3", "4"].map((d) => d.repeat(400)).join("\n"));

    const unknown = await client.readOutput("no-such-handle");
    expect(unknown.isError).toBe(true);
  });

  it("validates the op and answers spill-off clearly", async () => {
    const setup = await testSetup(fixtureServerToml("echo", "echoServer.ts"));
    const daemon = await startDaemon(setup);
    const raw = await RawClient.connect(daemon.info.address);
    const token = daemon.info.token;
    expect(await raw.request({ op: "read_output", token, offset: 0 })).toMatchObject({ ok: false, error: { code: "DAEMON_BAD_REQUEST" } });
    expect(await raw.request({ op: "read_output", token, handle: "h", offset: -1 })).toMatchObject({ ok: false, error: { code: "DAEMON_BAD_REQUEST" } });
    const off = (await raw.request({ op: "read_output", token, handle: "h" })) as { ok: boolean; result: CallToolResult };
    expect(off.ok).toBe(true);
    expect(off.result.isError).toBe(true);
    expect(texts(off.result).join()).toContain("spill is off");
  });
});
