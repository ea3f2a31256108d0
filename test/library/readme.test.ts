import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { configReference } from "../../src/config/configReference.js";
import { loadCommands } from "../../src/cli/commands/index.js";
import { layerTable } from "./importGraph.js";

const readme = readFileSync("README.md", "utf8");

describe("README matches the code", () => {
  it("carries the config reference generated from the schema", () => {
    const block = /<!-- config-reference:start -->\n([\s\S]*?)<!-- config-reference:end -->/.exec(readme)?.[1];
    expect(block?.trim()).toBe(configReference().trim());
  });

  it("carries the architecture's layer table as the import graph has it", () => {
    const block = /<!-- layers:start -->\n([\s\S]*?)<!-- layers:end -->/.exec(readme)?.[1];
    expect(block?.trim()).toBe(layerTable(undefined, { sizes: false }));
  });

  it("starts with the install-and-run command and the test command", () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    expect(firstBlock).toContain("npm ci && npm run abridge -- summarize warm --config examples/abridge.toml");
    expect(firstBlock).toContain("npm test");
  });

  it("documents every command", async () => {
    for (const command of await loadCommands()) expect(readme).toContain(`abridge ${command.path.join(" ")}`);
  });

  it("lists every option a command's --help shows in that command's table row", async () => {
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

  it("imports abridge in its snippets by the package's name", () => {
    const { name } = JSON.parse(readFileSync("package.json", "utf8")) as { name: string };
    const sources = [...readme.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
    const own = sources.filter((source) => source === name || /^(@[^/]+\/)?abridge(\/|$)/.test(source!));
    expect(own.length).toBeGreaterThan(0);
    expect(new Set(own)).toEqual(new Set([name]));
  });

  it("runs the library snippet against examples/abridge.toml", { timeout: 120_000 }, async () => {
    const section = readme.slice(readme.indexOf("## Library"), readme.indexOf("## Architecture"));
    const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(snippet).toBeDefined();
    const { mkdtemp, rm, writeFile } = await import("node:fs/promises");
    const os = await import("node:os");
    const path = await import("node:path");
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
});
