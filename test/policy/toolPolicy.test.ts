import { describe, expect, it } from "vitest";
import { isDestructiveTool, ToolPolicy } from "../../src/policy/toolPolicy.js";
import type { RawTool } from "../../src/model/types.js";
import { serverConfig } from "../helpers/processes.js";

function tool(name: string, annotations?: RawTool["annotations"]): RawTool {
  return { name, inputSchema: { type: "object" }, ...(annotations ? { annotations } : {}) };
}

const readTool = tool("read_file", { readOnlyHint: true });
const writeTool = tool("write_file", { readOnlyHint: false, destructiveHint: false });
const deleteTool = tool("delete_file", { destructiveHint: true });
const plainTool = tool("plain");

describe("ToolPolicy", () => {
  it("allows everything by default", () => {
    const policy = new ToolPolicy({ servers: [serverConfig({ name: "fs" })] });
    for (const t of [readTool, writeTool, deleteTool, plainTool]) expect(policy.check("fs", t)).toEqual({ allowed: true });
  });

  it("read_only lets only readOnlyHint: true through and names the rule", () => {
    const policy = new ToolPolicy({ servers: [serverConfig({ name: "fs", read_only: true })] });
    expect(policy.visible("fs", readTool)).toBe(true);
    for (const t of [writeTool, deleteTool, plainTool]) {
      expect(policy.check("fs", t)).toMatchObject({ allowed: false, rule: "servers.fs.read_only" });
    }
    // A guessed name has no annotations: refused.
    expect(policy.check("fs", "read_file")).toMatchObject({ allowed: false, rule: "servers.fs.read_only" });
  });

  it("destructive = deny hides destructive tools, unannotated ones included (MCP default)", () => {
    const policy = new ToolPolicy({ servers: [serverConfig({ name: "fs", destructive: "deny" })] });
    expect(policy.visible("fs", readTool)).toBe(true);
    expect(policy.visible("fs", writeTool)).toBe(true);
    expect(policy.check("fs", deleteTool)).toMatchObject({ allowed: false, rule: 'servers.fs.destructive = "deny"' });
    expect(policy.check("fs", plainTool)).toMatchObject({ allowed: false, rule: 'servers.fs.destructive = "deny"' });
    expect(isDestructiveTool(tool("x", { readOnlyHint: true, destructiveHint: true }))).toBe(false);
  });

  it("deny globs win over everything, an allow match wins over read_only and destructive", () => {
    const policy = new ToolPolicy({
      servers: [serverConfig({ name: "fs", read_only: true, destructive: "deny", allow: ["delete_*", "write_*", "read_*"], deny: ["write_*"] })],
    });
    expect(policy.check("fs", deleteTool)).toEqual({ allowed: true });
    expect(policy.check("fs", writeTool)).toMatchObject({ allowed: false, rule: 'servers.fs.deny["write_*"]' });
    expect(policy.check("fs", plainTool)).toMatchObject({ allowed: false, rule: "servers.fs.allow" });
    expect(policy.check("fs", readTool)).toEqual({ allowed: true });
  });

  it("--read-only forces read-only everywhere; no allow glob lifts it", () => {
    const policy = new ToolPolicy({
      servers: [serverConfig({ name: "a", allow: ["*"] }), serverConfig({ name: "b" })],
      forceReadOnly: true,
    });
    expect(policy.check("a", writeTool)).toMatchObject({ allowed: false, rule: "--read-only" });
    expect(policy.check("b", plainTool)).toMatchObject({ allowed: false, rule: "--read-only" });
    expect(policy.check("a", readTool)).toEqual({ allowed: true });
    expect(policy.check("unknown", writeTool)).toMatchObject({ allowed: false, rule: "--read-only" });
  });

  it("keeps servers apart", () => {
    const policy = new ToolPolicy({ servers: [serverConfig({ name: "a", read_only: true }), serverConfig({ name: "b" })] });
    expect(policy.visible("a", writeTool)).toBe(false);
    expect(policy.visible("b", writeTool)).toBe(true);
  });
});
