/**
 * The sandbox masked only what existed when the sandboxed server started: abridge's state dir,
 * created later by the first spilled output, and an audit log written after start were readable
 * from inside it (another server's spilled outputs included). What is masked is now created before
 * the spawn, so the mask covers it from the start. Without bubblewrap the sandboxed server fails
 * to start with the install hint while the other one serves.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureToml, resultText, startBridge } from "../policy/bridgeHarness.js";
import { expectBwrapMissing, HAVE_BWRAP, sandboxed } from "../policy/bubblewrap.js";

const bases: string[] = [];
afterEach(async () => {
  for (const base of bases.splice(0)) await rm(base, { recursive: true, force: true });
});

describe(`sandbox mask of paths created after spawn (bubblewrap ${HAVE_BWRAP ? "present" : "absent: the start-up error"})`, () => {
  it("another server's spilled outputs and the audit log, created after the sandboxed server started, stay unreadable", async () => {
    // Outside /tmp, which the sandbox replaces anyway: /var/tmp is on the real root file system.
    const base = await mkdtemp("/var/tmp/abridge-late-");
    bases.push(base);
    const stateDir = path.join(base, "state");
    const audit = path.join(base, "logs", "audit.jsonl");
    const toml =
      `mode = "full"\naudit_log = ${JSON.stringify(audit)}\n` +
      fixtureToml("box", "annotatedServer.ts", [], sandboxed()) +
      fixtureToml("keep", "annotatedServer.ts", [], ["max_output_bytes = 1000", "spill = true"]);
    const { bridge } = await startBridge(toml, { stateDir, cacheFile: path.join(base, "cache", "summaries.jsonl") });
    try {
      if (!HAVE_BWRAP) return expectBwrapMissing(bridge, ["box"], ["keep"]);
      expect(bridge.servers().map((s) => s.state)).toEqual(["ready", "ready"]);

      // After the sandboxed server started: a result big enough to be spilled into the state dir.
      const kept = await bridge.callTool("keep_big", { bytes: 400, blocks: 5 });
      expect(resultText(kept)).toContain("read_output");
      const outputs = path.join(stateDir, "outputs");
      const [spilled] = await readdir(outputs);
      expect(spilled).toBeDefined();
      const secretText = (await readFile(path.join(outputs, spilled!), "utf8")).slice(0, 200);
      expect(secretText.length).toBe(200);

      const fromBox = resultText(await bridge.callTool("box_read_path", { path: path.join(outputs, spilled!) }));
      expect(fromBox).not.toContain(secretText);
      expect(fromBox).toMatch(/cannot read/);
      const auditFromBox = resultText(await bridge.callTool("box_read_path", { path: audit }));
      expect(auditFromBox).not.toContain("keep");
      // The sandboxed server still reads what is not abridge's.
      expect(resultText(await bridge.callTool("box_read_path", { path: "/etc/hostname" }))).not.toMatch(/cannot read/);
    } finally {
      // Closed here, before the folder it writes to is removed.
      await bridge.close();
    }
  });
});
