import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { extraMetaTools } from "../../src/catalog/metaTools.js";
import { fixtureToml, resultText, startBridge } from "./bridgeHarness.js";

const calledTools = (lines: string[]): string[] =>
  lines.flatMap((l) => {
    const match = /annotated fixture: call (\w+)/.exec(l);
    return match ? [match[1]!] : [];
  });

describe("permission gates in the Bridge", () => {
  it("hides refused tools, refuses guessed names with the rule, never forwards, audits", async () => {
    const toml = `audit_log = "audit.jsonl"\nmode = "full"\n${fixtureToml("fs", "annotatedServer.ts", [], ["read_only = true", 'deny = ["delete_*"]'])}`;
    const { bridge, lines, dir } = await startBridge(toml);
    const names = bridge.list().map((t) => t.name);
    expect(names).toContain("fs_read_file");
    expect(names).not.toContain("fs_write_file");
    expect(names).not.toContain("fs_plain");
    expect(names).not.toContain("fs_delete_file");

    const write = await bridge.callTool("fs_write_file", { path: "/x" }, { client: "test" });
    expect(write.isError).toBe(true);
    expect(resultText(write)).toContain("servers.fs.read_only");
    const del = await bridge.callTool("mcp://fs/delete_file", {}, { client: "test" });
    expect(resultText(del)).toContain('servers.fs.deny["delete_*"]');
    const daemonForm = await bridge.callServerTool("fs", "plain", {}, { client: "daemon" });
    expect(resultText(daemonForm)).toContain("servers.fs.read_only");
    // A typo is still "unknown tool", not a refusal.
    await expect(bridge.callTool("fs_raed_file", {})).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });
    // get_schema does not reveal a hidden tool.
    expect(() => bridge.getSchema("fs_write_file")).toThrow(/unknown tool/);

    const ok = await bridge.callTool("fs_read_file", { path: "/etc/hostname" }, { client: "test" });
    expect(ok.isError).toBeUndefined();
    const count = await bridge.callTool("fs_count", {});
    // Only read_file and count ever reached the server.
    expect(resultText(count)).toBe("2");
    expect(calledTools(lines)).toEqual(["read_file", "count"]);

    await bridge.close();
    const audit = (await readFile(path.join(dir, "audit.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(audit.map((r) => [r.tool, r.outcome, r.rule])).toEqual([
      ["write_file", "refused", "servers.fs.read_only"],
      ["delete_file", "refused", 'servers.fs.deny["delete_*"]'],
      ["plain", "refused", "servers.fs.read_only"],
      ["read_file", "ok", undefined],
      ["count", "ok", undefined],
    ]);
    expect(audit[0]).toMatchObject({ client: "test", server: "fs", argsHash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), argsBytes: 13 });
    // No argument values unless audit_arguments = true.
    expect(JSON.stringify(audit)).not.toContain("/etc/hostname");
    expect(audit[2]).toMatchObject({ client: "daemon" });
  });

  it("--read-only (forceReadOnly) wins over allow globs; audit_arguments writes values", async () => {
    const toml = `audit_log = "audit.jsonl"\naudit_arguments = true\nmode = "full"\n${fixtureToml("fs", "annotatedServer.ts", [], ['allow = ["*"]'])}`;
    const { bridge, dir } = await startBridge(toml, { forceReadOnly: true });
    expect(bridge.list().map((t) => t.name)).not.toContain("fs_write_file");
    const write = await bridge.callTool("fs_write_file", { path: "/x" });
    expect(resultText(write)).toContain("Refused by --read-only");
    await bridge.close();
    const audit = await readFile(path.join(dir, "audit.jsonl"), "utf8");
    expect(JSON.parse(audit.trim())).toMatchObject({ outcome: "refused", rule: "--read-only", arguments: { path: "/x" } });
  });

  it("destructive = deny hides destructive and unannotated tools", async () => {
    const { bridge } = await startBridge(`mode = "full"\n${fixtureToml("fs", "annotatedServer.ts", [], ['destructive = "deny"'])}`);
    const names = bridge.list().map((t) => t.name);
    expect(names).toContain("fs_write_file");
    expect(names).not.toContain("fs_delete_file");
    expect(names).not.toContain("fs_plain");
    expect(resultText(await bridge.callTool("fs_delete_file", {}))).toContain('servers.fs.destructive = "deny"');
  });
});

describe("output limits and trust marking in the Bridge", () => {
  it("marks every result untrusted, merging with the upstream's _meta", async () => {
    const { bridge } = await startBridge(`mode = "full"\n${fixtureToml("fs", "annotatedServer.ts")}`);
    const result = await bridge.callTool("fs_meta", {});
    expect(result._meta).toEqual({ "upstream/key": 1, "abridge/trust": "untrusted-tool-output", "abridge/server": "fs" });
    expect(extraMetaTools(bridge.config)).toEqual([]);
  });

  it("cuts a large result; with spill the rest is read back through read_output", async () => {
    const toml =
      'mode = "full"\n' +
      fixtureToml("cut", "annotatedServer.ts", [], ["max_output_bytes = 1000"]) +
      fixtureToml("keep", "annotatedServer.ts", [], ["max_output_bytes = 1000", "spill = true"]);
    const { bridge } = await startBridge(toml);
    const cut = await bridge.callTool("cut_big", { bytes: 400, blocks: 5 });
    expect(cut.content).toHaveLength(3);
    // Each block counts by its JSON: 400 characters + 25 = 425 bytes.
    expect(resultText(cut)).toContain("output cut: 1275 of 2125 bytes left out (limit 1000); kept 2 of 5 content blocks");
    // Binary blocks count by their decoded size.
    expect(resultText(await bridge.callTool("cut_image", { bytes: 900 }))).not.toContain("output cut");
    expect(resultText(await bridge.callTool("cut_image", { bytes: 1001 }))).toContain("kept 0 of 1 content blocks");

    expect(extraMetaTools(bridge.config).map((t) => t.name)).toEqual(["read_output"]);
    const kept = await bridge.callTool("keep_big", { bytes: 400, blocks: 5 });
    const marker = resultText(kept);
    const match = /read_output with (\{.*?\})/.exec(marker);
    expect(match).not.toBeNull();
    let next = JSON.parse(match![1]!) as { handle: string; offset: number };
    expect(next.offset).toBe(802);
    let rest = "";
    for (let i = 0; i < 10; i++) {
      const page = await bridge.callTool("read_output", next);
      expect(page._meta).toMatchObject({ "abridge/trust": "untrusted-tool-output" });
      const blocks = page.content as { text: string }[];
      rest += blocks[0]!.text;
      const more = /read_output with (\{.*?\})/.exec(blocks[1]!.text);
      if (!more) break;
      next = JSON.parse(more[1]!) as typeof next;
    }
    expect(rest).toBe(["2", "3", "4"].map((d) => d.repeat(400)).join("\n"));
    const bad = await bridge.callTool("read_output", { handle: "nope" });
    expect(bad.isError).toBe(true);
  });
});
