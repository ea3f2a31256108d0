import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { codeModeMarkdown, QUICK_TASKS, runCodeMode, writeCodeModeResults } from "../../bench/codeMode.js";
import { useTempDir } from "../helpers/tempDir.js";

// The quick run of the code-mode bench: real sessions over the published filesystem and memory
// servers, a fresh process for the RSS figure. About 10 s on a quiet 2-core machine and past a
// minute on a loaded one, so it runs with npm run test:slow.
describe("bench/codeMode --quick", () => {
  const temp = useTempDir({ prefix: "abridge-codemode-test-" });

  it("--quick: both sessions of each task reach the data's answer, and every figure is written", async () => {
    const result = await runCodeMode({ quick: true });
    expect(result.tasks.map((t) => t.task)).toEqual(QUICK_TASKS);
    for (const t of result.tasks) {
      expect(t.answer).toBeDefined();
      // The classic session read results and the code session sent one program after its searches.
      expect(t.classic.calls).toBeGreaterThan(0);
      expect(t.classic.turns).toBeGreaterThanOrEqual(2);
      expect(t.code.calls).toBeGreaterThanOrEqual(2);
      expect(t.codeDetail.searches.length).toBe(t.code.calls - 1);
      expect(t.codeDetail.programCalls).toBeGreaterThan(0);
      expect(t.code.tokens).toBe(t.code.list + t.code.callText + t.code.results + t.code.answer);
      expect(t.classic.list).toBe(t.classic.listOnce * t.classic.turns);
    }
    expect(result.targets.map((t) => t.status).every((s) => s === "met" || s === "missed")).toBe(true);
    expect(result.targets).toHaveLength(4);

    await writeCodeModeResults(result, temp.path);
    const json = JSON.parse(await readFile(path.join(temp.path, "codeMode.json"), "utf8")) as {
      tasks: { task: string }[];
      targets: unknown[];
      runtime: { coldStart: { runMsMedian: number } };
    };
    expect(json.tasks.map((t) => t.task)).toEqual(QUICK_TASKS);
    expect(json.targets).toHaveLength(4);
    expect(Number.isFinite(json.runtime.coldStart.runMsMedian)).toBe(true);
    const markdown = await readFile(path.join(temp.path, "codeMode.md"), "utf8");
    expect(markdown).toContain(codeModeMarkdown(result));
    for (const name of QUICK_TASKS) expect(markdown).toContain(`| ${name} |`);
    expect(markdown).toMatch(/\| extra RSS for 16 concurrent runs \| [\d.]+ MiB \| <= 64 MiB \| (met|missed) \|/);
  });
});
