import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { fixtureServerToml, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { Watch } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

type Text = { type: string; text: string };

describe("hot reload of the config", () => {
  const temp = useTempDir({ marker: "reload" });
  let session: ServeSession | undefined;
  afterEach(async () => {
    await session?.close();
    session = undefined;
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  it("adds, removes and re-filters servers without a restart and without dropping a call in flight", async () => {
    const base = `cache_dir = "cache"\nmode = "full"\n`;
    const slow = fixtureServerToml("slow", "slowServer.ts", ["--name", temp.marker]);
    const echo = fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", temp.marker]);
    const config = await writeConfig(temp.path, base + slow + echo);
    session = await serveOverStdio(config);
    let changes = 0;
    const changed = new Watch();
    session.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes += 1;
      changed.changed();
    });
    const before = (await session.client.listTools()).tools.map((t) => t.name);
    expect(before).toContain("echo_echo");
    const slowTool = before.find((n) => n.startsWith("slow_"))!;
    expect(slowTool).toBeDefined();

    // A call in flight to the unchanged slow server survives the reload.
    const inFlight = session.client.callTool({ name: slowTool, arguments: { ms: 3000 } }, undefined, { timeout: 30_000 });

    // Remove echo, add a second echo under another name with a deny filter; write by rename like editors do.
    const next = base + slow + fixtureServerToml("echo2", "echoServer.ts", ["--tools", "1", "--name", temp.marker], 'deny = ["tool_*"]');
    await writeFile(path.join(temp.path, "abridge.toml.tmp"), next);
    await rename(path.join(temp.path, "abridge.toml.tmp"), config);

    // Listed again after each list_changed until the edit shows: a list that changes after the
    // client listed it is announced, so one that is not there yet comes with a notification.
    let after: string[] = [];
    for (;;) {
      const seen = changes;
      after = (await session.client.listTools()).tools.map((t) => t.name);
      if (after.includes("echo2_echo") && !after.includes("echo_echo")) break;
      await changed.until(() => changes > seen, { what: "list_changed after the edit", detail: () => `listed ${after.join(", ")}` });
    }
    expect(after).not.toContain("echo2_tool_001");
    expect(after).toContain(slowTool);
    const result = await inFlight;
    expect(result.isError ?? false).toBe(false);
    await changed.until(() => changes > 0, { what: "a list_changed notification" });
    const called = await session.client.callTool({ name: "echo2_echo", arguments: { text: "new server" } });
    expect((called.content as Text[])[0]!.text).toBe("new server");
  });

  it("keeps the running config when an edit is invalid, and says why", async () => {
    const config = await writeConfig(temp.path, `cache_dir = "cache"\n${fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", temp.marker])}`);
    session = await serveOverStdio(config, ["--log-level", "info"]);
    await writeFile(config, `cache_dir = "cache"\nmode = "tiny"\n`);
    await session.untilStderr("config edit rejected", "the rejection in the log");
    expect(session.stderr()).toContain("mode: expected");
    const r = await session.client.callTool({ name: "echo_echo", arguments: { text: "still here" } });
    expect((r.content as Text[])[0]!.text).toBe("still here");
  });

  it("keeps settings opened at start (audit log) and says they need a restart", async () => {
    const echo = fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", temp.marker]);
    const config = await writeConfig(temp.path, `cache_dir = "cache"\naudit_log = "audit1.jsonl"\n${echo}`);
    session = await serveOverStdio(config, ["--log-level", "info"]);
    await writeFile(config, `cache_dir = "cache"\naudit_log = "audit2.jsonl"\naudit_arguments = true\n${echo}`);
    await session.untilStderr("take effect after a restart", "the restart notice");
    expect(session.stderr()).toMatch(/keys=.*audit_log/);
    await session.client.callTool({ name: "echo_echo", arguments: { text: "where does this go" } });
    const audit1 = await readFile(path.join(temp.path, "audit1.jsonl"), "utf8");
    expect(audit1).toContain('"tool":"echo"');
    // Still the running setting: no argument values, and no second log.
    expect(audit1).not.toContain("where does this go");
    await expect(readFile(path.join(temp.path, "audit2.jsonl"), "utf8")).rejects.toMatchObject({ code: "ENOENT" });
  });
});
