import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { resultFormatFor } from "../../src/result/resultFormat.js";

const parse = (text: string) => parseConfigText(text, { file: "/x/abridge.toml", env: {} });

describe("result_format, result_format_tools and structured in the config", () => {
  it("defaults to compact and both; a server inherits the top-level result_format unless it sets its own", () => {
    const config = parse(`[servers.a]\ncommand = "a"\n[servers.b]\ncommand = "b"\nresult_format = "lean"\nstructured = "text-only"\n`);
    const [a, b] = config.servers;
    expect(a).toMatchObject({ result_format: "compact", structured: "both", result_format_tools: {} });
    expect(b).toMatchObject({ result_format: "lean", structured: "text-only" });
    const asIs = parse(`result_format = "as-is"\n[servers.a]\ncommand = "a"\n`);
    expect(asIs.servers[0]!.result_format).toBe("as-is");
  });

  it("result_format_tools: a tool's own name beats the globs, the first matching glob wins, else the server's format", () => {
    const config = parse(
      [
        `[servers.fs]`,
        `command = "fs"`,
        `result_format = "lean"`,
        `[servers.fs.result_format_tools]`,
        `"read_*" = "as-is"`,
        `"read_graph" = "compact"`,
        `"*_file*" = "compact"`,
      ].join("\n"),
    );
    const fs = config.servers[0]!;
    expect(resultFormatFor(fs, "read_graph")).toBe("compact");
    expect(resultFormatFor(fs, "read_text_file")).toBe("as-is");
    expect(resultFormatFor(fs, "get_file_info")).toBe("compact");
    expect(resultFormatFor(fs, "list_directory")).toBe("lean");
    expect(resultFormatFor(undefined, "x")).toBe("compact");
  });

  it("rejects unknown values and says where", () => {
    expect(() => parse(`result_format = "tiny"\n`)).toThrow(/result_format/);
    expect(() => parse(`[servers.a]\ncommand = "a"\nstructured = "none"\n`)).toThrow(/servers\.a\.structured/);
    expect(() => parse(`[servers.a]\ncommand = "a"\n[servers.a.result_format_tools]\n"x" = "small"\n`)).toThrow(/servers\.a\.result_format_tools\.x/);
  });

  it("the example of docs/result-shaping.md is a valid config that means what it says", () => {
    const page = readFileSync(path.join(import.meta.dirname, "..", "..", "docs", "result-shaping.md"), "utf8");
    const block = /```toml\n([\s\S]*?)```/.exec(page)?.[1];
    expect(block).toBeDefined();
    const fs = parse(block!).servers[0]!;
    expect(fs).toMatchObject({ name: "fs", result_format: "compact", structured: "text-only" });
    expect(resultFormatFor(fs, "read_text_file")).toBe("as-is");
    expect(resultFormatFor(fs, "directory_tree")).toBe("compact");
  });
});
