/**
 * Child process for the cache tests: opens a JsonlStore on argv[2] and appends argv[4] entries of
 * server argv[3], all started at once. It prints "ready" after opening and waits for a line on
 * stdin before appending, so two workers can be released together; it prints "done <n>" at the end.
 */
import { createInterface } from "node:readline";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { makeEntry } from "./cacheEntries.js";

async function main(): Promise<void> {
  const [file, server, countText] = process.argv.slice(2);
  if (file === undefined || server === undefined || countText === undefined) {
    throw new Error("usage: appendWorker <file> <server> <count>");
  }
  const count = Number.parseInt(countText, 10);
  const store = await JsonlStore.open({ file });
  const lines = createInterface({ input: process.stdin });
  const go = new Promise<void>((resolve) => lines.once("line", () => resolve()));
  process.stdout.write("ready\n");
  await go;
  lines.close();
  const appends: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    // Summaries of varying length so lines differ in size, as real ones do.
    appends.push(store.append(makeEntry(server, `tool_${i}`, `${server} summary ${i} ${"x".repeat(i % 97)}`, i)));
  }
  await Promise.all(appends);
  await store.close();
  process.stdout.write(`done ${count}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
