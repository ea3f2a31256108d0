/**
 * Child-process probe of the cache benchmark: opens one `summaries.jsonl` with {@link JsonlStore}
 * in a fresh process (so earlier runs leave no warm heap or JIT state behind) and prints one JSON
 * line `{loadMs, loadCpuMs, heapMiB, rssMiB, rssPeakMiB, liveKeys, invalidLines}` to stdout. Run as
 * `node --expose-gc --import tsx bench/cacheLoadProbe.ts <file>`; this file is the only bench code
 * that touches `process`, because it is a process entry.
 */
import { JsonlStore } from "../src/cache/jsonlStore.js";

const file = process.argv[2];
if (file === undefined) {
  process.stderr.write("usage: cacheLoadProbe.ts <summaries.jsonl>\n");
  process.exit(2);
}
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
  })}\n`,
);
await store.close();
