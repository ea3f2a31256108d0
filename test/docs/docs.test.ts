import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { configReference } from "../../src/config/configReference.js";
import { loadCommands } from "../../src/cli/commands/index.js";
import { layerTable } from "../library/importGraph.js";
import { docFiles, docText, REPO } from "./docBlocks.js";

const readme = docText("README.md");
/** The README and every page under docs/. */
const files = docFiles().map((file) => ({ file, text: docText(file) }));

describe("the README and docs/ match the code", () => {
  it("carry the config reference generated from the schema, in docs/configuration.md", () => {
    const block = /<!-- config-reference:start -->\n([\s\S]*?)<!-- config-reference:end -->/.exec(docText("docs/configuration.md"))?.[1];
    expect(block?.trim()).toBe(configReference().trim());
  });

  it("carry the architecture's layer table as the import graph has it, in docs/architecture.md", () => {
    const block = /<!-- layers:start -->\n([\s\S]*?)<!-- layers:end -->/.exec(docText("docs/architecture.md"))?.[1];
    expect(block?.trim()).toBe(layerTable(undefined, { sizes: false }));
  });

  it("start the README with the install-and-run command and the test command", () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    expect(firstBlock).toContain("npm ci && npm run abridge -- summarize warm --config examples/abridge.toml");
    expect(firstBlock).toContain("npm test");
  });

  it("document every command in the README", async () => {
    for (const command of await loadCommands()) expect(readme).toContain(`abridge ${command.path.join(" ")}`);
  });

  it("list every option a command's --help shows in that command's row of the README's table", async () => {
    const rows = readme.split("\n").filter((line) => line.startsWith("| `abridge "));
    for (const command of await loadCommands()) {
      const name = `abridge ${command.path.join(" ")}`;
      const row = rows.find((line) => line.startsWith(`| \`${name} `) || line.startsWith(`| \`${name}\``));
      expect(row, name).toBeDefined();
      // --log-level and --log-json are global, listed once under the table.
      const options = Object.keys(command.options ?? {}).filter((o) => o !== "log-level" && o !== "log-json");
      for (const option of options) expect(row, `${name} --${option}`).toContain(`--${option}`);
    }
  });

  it("import abridge in their snippets by the package's name", () => {
    const { name } = JSON.parse(readFileSync("package.json", "utf8")) as { name: string };
    const sources = files.flatMap(({ text }) => [...text.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]));
    const own = sources.filter((source) => source === name || /^(@[^/]+\/)?abridge(\/|$)/.test(source!));
    expect(own.length).toBeGreaterThan(0);
    expect(new Set(own)).toEqual(new Set([name]));
  });

  it("run the library snippet of docs/library.md against examples/abridge.toml", { timeout: 120_000 }, async () => {
    const snippet = /```ts\n([\s\S]*?)```/.exec(docText("docs/library.md"))?.[1];
    expect(snippet).toBeDefined();
    const { mkdtemp, rm, writeFile } = await import("node:fs/promises");
    const os = await import("node:os");
    const { execFile } = await import("node:child_process");
    const { promisify } = await import("node:util");
    const repo = process.cwd();
    const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-snippet-"));
    try {
      // The snippet as a host would run it, with the package resolved to this checkout's source.
      expect(snippet).toContain('from "@abridge-mcp/abridge"');
      const script = snippet!
        .replace('from "@abridge-mcp/abridge"', `from ${JSON.stringify(path.join(repo, "src", "index.ts"))}`)
        .replace('"/path/to/abridge"', JSON.stringify(repo))
        .replace('"/tmp/abridge-example/summaries.jsonl"', JSON.stringify(path.join(dir, "summaries.jsonl")));
      const file = path.join(dir, "host.mts");
      await writeFile(file, script);
      const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", file], { cwd: repo, timeout: 110_000 });
      expect(stdout).toContain("everything_echo");
      expect(stdout).toContain("get_schema");
      expect(stdout).toContain("Echo: hi");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("link only to files and headings that exist", () => {
    const broken: string[] = [];
    for (const { file, text } of files) {
      const prose = text.replace(/^```[\s\S]*?^```/gm, "");
      for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [relative, anchor] = target!.split("#") as [string, string | undefined];
        const linked = relative === "" ? file : path.normalize(path.join(path.dirname(file), relative));
        if (!existsSync(path.join(REPO, linked))) {
          broken.push(`${file}: ${target} (no ${linked})`);
          continue;
        }
        if (anchor !== undefined && linked.endsWith(".md") && !anchorsOf(docText(linked)).has(anchor))
          broken.push(`${file}: ${target} (no heading #${anchor} in ${linked})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("name only paths of the checkout that exist", () => {
    // Written in backticks, under a top folder of the checkout, with an extension or a final slash
    // (so `prompts/get`, a method, is no path); bench/results/.cache is said not to be committed.
    const missing: string[] = [];
    for (const { file, text } of files) {
      for (const [, named] of text.matchAll(/`((?:src|test|bench|examples|prompts|\.ci)\/[^`\s*<>]*)`/g)) {
        if (!/(\.[a-z]+|\/)$/.test(named!) || named === "bench/results/.cache") continue;
        if (!existsSync(path.join(REPO, named!))) missing.push(`${file}: ${named}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

/** The anchors GitHub gives the headings of `markdown`: lower case, punctuation dropped, spaces as dashes. */
function anchorsOf(markdown: string): Set<string> {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, "");
  const anchors = new Set<string>();
  for (const [, heading] of prose.matchAll(/^#{1,6} (.+)$/gm)) {
    const anchor = heading!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    let unique = anchor;
    for (let n = 1; anchors.has(unique); n++) unique = `${anchor}-${n}`;
    anchors.add(unique);
  }
  return anchors;
}
