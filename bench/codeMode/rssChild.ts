/**
 * Run in a fresh node process (`--expose-gc`) by runtimeFigures.ts: the RSS that 16 concurrent
 * program runs add to a process holding a started bridge. Each run builds a data set of 10,000
 * small objects and waits on a 300 ms call of the slow fixture, so all 16 are alive at once. The
 * kernel's high-water mark is reset before each batch (`/proc/self/clear_refs`), so its peak is
 * the batch's. With `--primed` one run of `return 1` comes first (a worker started, the engine
 * compiled), timed. Prints one JSON line: the first batch's extra MiB, a second batch's, the priming run's ms.
 *
 *   node --expose-gc --import tsx bench/codeMode/rssChild.ts <dir> [--primed]
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "../corpus.js";
import { stdioServerToml } from "../benchConfig.js";
import { processMemoryKiB } from "../measure.js";
import { openBridge } from "./openBridge.js";
import type { Bridge } from "../../src/core/bridge.js";
import { messageOf } from "../../src/model/errors.js";

const RUNS = 16;
const PROGRAM = "const data = Array.from({ length: 10000 }, (_, i) => ({ i, s: 'item ' + i })); await slow.sleep({ ms: 300, steps: 1 }); return data.length;";

async function batch(bridge: Bridge): Promise<number> {
  globalThis.gc?.();
  writeFileSync("/proc/self/clear_refs", "5");
  const before = processMemoryKiB(process.pid, "VmRSS");
  const runs = await Promise.all(Array.from({ length: RUNS }, () => bridge.runCode(PROGRAM)));
  const peak = processMemoryKiB(process.pid, "VmHWM");
  const failed = runs.find((r) => r.result.returnJson !== "10000");
  if (failed !== undefined) throw new Error(`a run failed: ${JSON.stringify(failed.result.error ?? failed.result.returnJson)}`);
  return (peak - before) / 1024;
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (dir === undefined) throw new Error("usage: rssChild.ts <dir>");
  const bridge = await openBridge(dir, [stdioServerToml("slow", path.join(REPO_ROOT, "test", "fixtures", "slowServer.ts"))]);
  try {
    let primingRunMs: number | undefined;
    if (process.argv.includes("--primed")) {
      const t = performance.now();
      const { result } = await bridge.runCode("return 1");
      primingRunMs = performance.now() - t;
      if (result.returnJson !== "1") throw new Error(`return 1 answered ${JSON.stringify(result)}`);
    }
    const firstMiB = await batch(bridge);
    const secondMiB = await batch(bridge);
    process.stdout.write(`${JSON.stringify({ firstMiB, secondMiB, ...(primingRunMs !== undefined ? { primingRunMs } : {}) })}\n`);
  } finally {
    await bridge.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`rssChild: ${messageOf(err)}\n`);
  process.exitCode = 1;
});
