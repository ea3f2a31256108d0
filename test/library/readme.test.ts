import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { configReference } from "../../src/config/configReference.js";
import { COMMANDS } from "../../src/cli/commands/index.js";

const readme = readFileSync("README.md", "utf8");

describe("README matches the code", () => {
  it("carries the config reference generated from the schema", () => {
    const block = /<!-- config-reference:start -->\n([\s\S]*?)<!-- config-reference:end -->/.exec(readme)?.[1];
    expect(block?.trim()).toBe(configReference().trim());
  });

  it("starts with the install-and-run command and the test command", () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    expect(firstBlock).toContain("npm ci && npm run abridge -- summarize warm --config examples/abridge.toml");
    expect(firstBlock).toContain("npm test");
  });

  it("documents every command", () => {
    for (const command of COMMANDS) expect(readme).toContain(`abridge ${command.path.join(" ")}`);
  });
});
