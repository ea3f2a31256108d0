/**
 * Child-process probe of the cache benchmark: opens one `summaries.jsonl` with {@link JsonlStore}
 * in a fresh process (so earlier runs leave no warm heap or JIT state behind) and prints one JSON
 * line `{loadMs, loadCpuMs, heapMiB, rssMiB, rssPeakMiB, liveKeys, invalidLines, firstGets, firstGetsMs}`
 * to stdout (`firstGetsMs`: the first `get` of 1,000 keys after the load, each read and parsed then). Run as
 * `node --expose-gc --import tsx bench/cacheLoadProbe.ts <file>`; this file is the only bench code
 * that touches `process`, because it is a process entry.
 */
import { open } from "node:fs/promises";
import { JsonlStore } from "../src/cache/jsonlStore.js";

/** Keys of the first `count` lines of `path`, read before the load so that reading them is not timed. */
async function firstKeys(path: string, count: number): Promise<string[]> {
  const handle = await open(path, "r");
  try {
    const keys: string[] = [];
    for await (const line of handle.readLines()) {
      keys.push((JSON.parse(line) as { key: string }).key);
      if (keys.length === count) break;
    }
    return keys;
  } finally {
    await handle.close();
  }
}

const GETS = 1000;
const file = process.argv[2];
if (file === undefined) {
  process.stderr.write("usage: cacheLoadProbe.ts <summaries.jsonl>\n");
  process.exit(2);
}
const sampleKeys = await firstKeys(file, GETS);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
gc();
const heapBefore = process.memoryUsage().heapUsed;
const rssBefore = process.memoryUsage().rss;
const cpuBefore = process.cpuUsage();
const start = performance.now();
const store = await JsonlStore.open({ file, readOnly: true });
const loadMs = performance.now() - start;
// CPU time of this process (all threads): steadier than wall time on a machine shared with other work.
const cpu = process.cpuUsage(cpuBefore);
gc();
const usage = process.memoryUsage();
const stats = store.stats();
// Entries are read and validated on their first get: what 1,000 of those cost after the load.
const getStart = performance.now();
let found = 0;
for (const key of sampleKeys) if (store.get(key) !== undefined) found += 1;
const firstGetsMs = performance.now() - getStart;
process.stdout.write(
  `${JSON.stringify({
    loadMs,
    loadCpuMs: (cpu.user + cpu.system) / 1000,
    heapMiB: (usage.heapUsed - heapBefore) / 2 ** 20,
    rssMiB: (usage.rss - rssBefore) / 2 ** 20,
    // maxRSS is in KiB: the process's high-water mark, reached during the load.
    rssPeakMiB: (process.resourceUsage().maxRSS * 1024 - rssBefore) / 2 ** 20,
    liveKeys: stats.liveKeys,
    invalidLines: stats.invalidLines,
    firstGets: found,
    firstGetsMs,
  })}\n`,
);
await store.close();
