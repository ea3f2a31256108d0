import { describe, expect, it } from "vitest";
import { compactDescription } from "../../src/catalog/renderTools.js";
import { parameterList } from "../../src/catalog/signature.js";
import type { CatalogTool } from "../../src/catalog/types.js";
import { admitted } from "../helpers/admitted.js";

const inputSchema = { type: "object", properties: { message: { type: "string" } }, required: ["message"] };

function tool(summary: string | undefined, description = "Echoes back the input string"): CatalogTool {
  return {
    name: "everything_echo",
    server: "everything",
    uri: "mcp://everything/echo",
    key: "everything:echo:0000000000000000",
    tool: admitted({ name: "echo", description, inputSchema }),
    ...(summary !== undefined ? { summary: { summary, params: {} } } : {}),
  };
}

describe("compact descriptions carry the parameter line once", () => {
  const line = parameterList(inputSchema, { typedStrings: true, defaults: true });

  it("appends the line to a summary that lacks it", () => {
    expect(compactDescription(tool("Echoes back the input string"))).toBe(`Echoes back the input string\n${line}`);
  });

  it("does not append it to a summary that already ends with it (abridge in front of abridge)", () => {
    expect(compactDescription(tool(`Echoes back the input string ${line}`))).toBe(`Echoes back the input string ${line}`);
    expect(compactDescription(tool(`Echoes back the input string\n${line}\n`))).toBe(`Echoes back the input string\n${line}\n`);
  });

  it("does so too for an unsummarized description that ends with it", () => {
    expect(compactDescription(tool(undefined, `Echoes back the input string ${line}`))).toBe(`Echoes back the input string ${line}`);
  });

  it("still appends it when the ending only looks alike", () => {
    expect(compactDescription(tool(`Calls echo${line}`))).toBe(`Calls echo${line}\n${line}`);
    expect(compactDescription(tool("Echoes back the input string (msg)"))).toBe(`Echoes back the input string (msg)\n${line}`);
  });
});
