import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");

/**
 * Run in a process of its own: the test runner itself may have loaded the tokenizer already. The
 * script lists a catalog in every mode but auto: lazy and full with a tool that has no stored
 * counts (neither mode chooses between forms), summary, compact and code with the same tool whose
 * entry has them (forms are chosen by the stored numbers); then it counts.
 */
const SCRIPT = `
import { createRequire } from "node:module";
import { RENDERER_VERSION, renderTools } from "./src/catalog/renderTools.ts";
import { countTokens } from "./src/index.ts";
const cache = createRequire(import.meta.url).cache;
const loaded = () => Object.keys(cache).some((file) => file.includes("gpt-tokenizer"));
const tool = { name: "a_echo", server: "a", uri: "abridge://a/echo", key: "a:echo:0", tool: { name: "echo", description: "Echo the text.", inputSchema: { type: "object", properties: { text: { type: "string" } } } } };
const counted = { ...tool, summary: { summary: "Echoes text.", params: {} }, formTokens: { renderer: RENDERER_VERSION, full: 40, summary: 38, names: 30, types: 32, none: 28 } };
const before = loaded();
for (const mode of ["lazy", "full"]) renderTools([tool], mode);
for (const mode of ["summary", "compact", "code"]) renderTools([counted], mode);
const afterLists = loaded();
const count = countTokens("hello world");
console.log(JSON.stringify({ before, afterLists, count, afterCount: loaded() }));
`;

describe("the o200k tokenizer", () => {
  it("is loaded on the first count, not when the library is imported or a list is rendered in a mode other than auto", async () => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", SCRIPT], { cwd: ROOT });
    const result = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
    expect(result).toEqual({ before: false, afterLists: false, count: 2, afterCount: true });
  });
});
