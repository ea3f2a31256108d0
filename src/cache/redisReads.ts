import { Command, type Redis } from "ioredis";
import { MAX_ENTRY_BYTES } from "./entryLimits.js";
import { SCAN_COUNT, type RedisLayout } from "./redisLayout.js";
import { PAGE_SCRIPT, READ_SCRIPT } from "./redisScripts.js";

/** Bytes of values one page brings at most (plus one inner HSCAN step's worth): a page is one round trip. */
export const PAGE_BYTES = 1024 * 1024;
/**
 * How long one page may take. A page is quick, unless the hash holds a huge value: HSCAN copies
 * every value it visits inside Redis (half a gigabyte takes seconds), and a page that timed out
 * could never be read past. Longer than the connection's command timeout for that one reason.
 */
export const PAGE_TIMEOUT_MS = 60_000;

/** What {@link scanEntries} hands on per field. */
export interface EntryVisitor {
  /** Called before each page is asked for. */
  page?(): void;
  /** A field whose value is within {@link MAX_ENTRY_BYTES}. */
  value(field: string, text: string): void;
  /** A field over the bound: the size of its value (or of its name, then cut); neither left Redis. */
  oversized(field: string, bytes: number): void;
}

/** Options of {@link scanEntries}. */
export interface ScanOptions {
  /** Only fields matching this glob. */
  match?: string;
  /** Delete the fields over the bound as they are met, inside Redis (compaction). */
  dropOversized?: boolean;
}

/**
 * Reads the entries hash in pages of at most {@link SCAN_COUNT} fields and about {@link PAGE_BYTES}
 * of values, a round trip each, through a script that leaves out any field over
 * {@link MAX_ENTRY_BYTES}: a value of hundreds of megabytes costs a bridge a field name and a
 * number, never the transfer.
 */
export async function scanEntries(client: Redis, layout: RedisLayout, visitor: EntryVisitor, options: ScanOptions = {}): Promise<void> {
  let cursor = "0";
  do {
    const args: (string | number)[] = [
      cursor,
      SCAN_COUNT,
      MAX_ENTRY_BYTES,
      PAGE_BYTES,
      options.dropOversized === true ? "1" : "0",
      ...(options.match !== undefined ? [options.match] : []),
    ];
    visitor.page?.();
    // Its own timeout: ioredis starts a command's timer once, so one set here outlasts the client's.
    const command = new Command("eval", [PAGE_SCRIPT, 1, layout.entries, ...args], { replyEncoding: "utf8" });
    command.setTimeout(PAGE_TIMEOUT_MS);
    const [next, kept, over] = (await client.sendCommand(command)) as [string, string[], (string | number)[]];
    cursor = next;
    for (let i = 0; i + 1 < kept.length; i += 2) visitor.value(kept[i] as string, kept[i + 1] as string);
    for (let i = 0; i + 1 < over.length; i += 2) visitor.oversized(String(over[i]), Number(over[i + 1]));
  } while (cursor !== "0");
}

/** One field of the entries hash: its value, nothing, or the size of a value over the bound (not sent). */
export async function readEntryField(client: Redis, layout: RedisLayout, field: string): Promise<{ text?: string; oversized?: number }> {
  const answer = (await client.eval(READ_SCRIPT, 1, layout.entries, field, MAX_ENTRY_BYTES)) as string | number | null;
  if (answer === null) return {};
  return typeof answer === "number" ? { oversized: answer } : { text: answer };
}
