import { describe, expect, it } from "vitest";
import { encodeHeaderValue, paramHeaders, scanHeaderDeclarations } from "../../../src/upstream/mcp/paramHeaders.js";

const schema = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: "object",
  properties,
  ...extra,
});

describe("x-mcp-header declarations", () => {
  it("are found on string, integer and boolean properties at any depth of properties", () => {
    const scan = scanHeaderDeclarations(
      schema({
        region: { type: "string", "x-mcp-header": "Region" },
        limits: { type: "object", properties: { priority: { type: "integer", "x-mcp-header": "Priority" } } },
        verbose: { type: "boolean", "x-mcp-header": "Verbose" },
        free: { type: "number" },
      }),
    );
    expect(scan).toEqual({
      declarations: [
        { path: ["region"], header: "Region", type: "string" },
        { path: ["limits", "priority"], header: "Priority", type: "integer" },
        { path: ["verbose"], header: "Verbose", type: "boolean" },
      ],
    });
  });

  it("make the tool invalid when they break a rule, saying which", () => {
    const invalid = (s: unknown): string => {
      const scan = scanHeaderDeclarations(s);
      return "invalid" in scan ? scan.invalid : "valid";
    };
    expect(invalid(schema({ n: { type: "number", "x-mcp-header": "N" } }))).toContain(
      "n: x-mcp-header is allowed only on a string, integer or boolean property",
    );
    expect(invalid(schema({ a: { type: "string", "x-mcp-header": "Same" }, b: { type: "string", "x-mcp-header": "same" } }))).toContain(
      'declared twice (also as "Same")',
    );
    expect(invalid(schema({ a: { type: "string", "x-mcp-header": "has space" } }))).toContain("is not a header name");
    expect(invalid(schema({ a: { type: "string", "x-mcp-header": "a:b" } }))).toContain("is not a header name");
    expect(invalid(schema({ a: { type: "string", "x-mcp-header": "grüße" } }))).toContain("is not a header name");
    expect(invalid(schema({ a: { type: "string", "x-mcp-header": "" } }))).toContain("is not a header name");
    expect(invalid(schema({ list: { type: "array", items: { type: "string", "x-mcp-header": "Item" } } }))).toContain(
      "list.<items>: x-mcp-header is allowed only on a property reached through properties",
    );
    expect(invalid(schema({}, { anyOf: [schema({ a: { type: "string", "x-mcp-header": "A" } })] }))).toContain("reached through properties");
    expect(invalid(schema({}, { $defs: { d: { type: "string", "x-mcp-header": "D" } } }))).toContain("reached through properties");
    expect(invalid({ type: "object", "x-mcp-header": "Root" })).toContain("the schema's root");
  });

  it("give one Mcp-Param header per present, typed argument, encoded as header values are", () => {
    const scan = scanHeaderDeclarations(
      schema({
        region: { type: "string", "x-mcp-header": "Region" },
        priority: { type: "integer", "x-mcp-header": "Priority" },
        debug: { type: "boolean", "x-mcp-header": "Debug" },
        note: { type: "string", "x-mcp-header": "Note" },
        gone: { type: "string", "x-mcp-header": "Gone" },
        wrong: { type: "integer", "x-mcp-header": "Wrong" },
      }),
    );
    if (!("declarations" in scan)) throw new Error(scan.invalid);
    expect(paramHeaders(scan.declarations, { region: "us-west1", priority: 42, debug: false, note: "Hello, 世界", gone: null, wrong: "7" })).toEqual({
      "Mcp-Param-Region": "us-west1",
      "Mcp-Param-Priority": "42",
      "Mcp-Param-Debug": "false",
      "Mcp-Param-Note": `=?base64?${Buffer.from("Hello, 世界").toString("base64")}?=`,
    });
  });

  it("encodeHeaderValue: plain printable ASCII as it is; empty, padded, control or non-ASCII text as base64", () => {
    expect(encodeHeaderValue("us-west1")).toBe("us-west1");
    for (const value of ["", " padded", "line1\nline2", "ü", "=?base64?x?="]) {
      expect(encodeHeaderValue(value)).toBe(`=?base64?${Buffer.from(value).toString("base64")}?=`);
    }
  });
});
