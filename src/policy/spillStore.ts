import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import type { CallToolResult } from "../model/types.js";
import { utf8Bytes } from "./outputLimit.js";

/** Options of {@link SpillStore}. */
export interface SpillStoreOptions {
  /** Folder of spilled outputs, e.g. `<state dir>/outputs`. Created (0700) on first use. */
  dir: string;
  /** Spilled outputs older than this are deleted when the next one is written (default 24 h). */
  retentionMs?: number;
  logger?: Logger;
}

/** One page of a spilled output. */
export interface SpillPage {
  text: string;
  /** Byte offset of the page's first byte. */
  offset: number;
  /** Where the next page starts; `undefined` at the end. */
  nextOffset: number | undefined;
  totalBytes: number;
}

/** A handle is 32 lowercase hex characters: checked before it becomes part of a path. */
const HANDLE_PATTERN = /^[0-9a-f]{32}$/;

function renderBlock(block: unknown): string {
  if (typeof block === "object" && block !== null && (block as { type?: unknown }).type === "text") {
    const text = (block as { text?: unknown }).text;
    if (typeof text === "string") return text;
  }
  return JSON.stringify(block) ?? "";
}

/**
 * The text form of a result that `read_output` pages through: each content block on its own
 * line(s) (text as is, other blocks as JSON), then `structuredContent` as JSON if present.
 */
export function spillText(result: CallToolResult): string {
  const parts = (Array.isArray(result.content) ? result.content : []).map(renderBlock);
  if (result.structuredContent !== undefined) parts.push(`structuredContent: ${JSON.stringify(result.structuredContent)}`);
  return parts.join("\n");
}

/** Byte offset in {@link spillText} where content block `index` starts. */
export function spillOffsetOf(result: CallToolResult, index: number): number {
  const blocks = Array.isArray(result.content) ? result.content : [];
  let offset = 0;
  for (let i = 0; i < index && i < blocks.length; i++) offset += utf8Bytes(renderBlock(blocks[i])) + 1;
  return offset;
}

/**
 * Results too large to pass on, kept whole in the state dir behind a random handle so the model
 * can page through them with `read_output`. Files are private to the user (0600 in a 0700 dir).
 */
export class SpillStore {
  /** The folder spilled outputs are kept in. */
  readonly dir: string;
  private readonly retentionMs: number;
  private readonly logger: Logger;
  private pruned = false;

  constructor(options: SpillStoreOptions) {
    this.dir = options.dir;
    this.retentionMs = options.retentionMs ?? 24 * 60 * 60 * 1000;
    this.logger = options.logger ?? silentLogger;
  }

  /** Writes the text form of `result` and returns its handle. */
  async save(result: CallToolResult, signal?: AbortSignal): Promise<string> {
    const handle = randomBytes(16).toString("hex");
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await writeFile(this.fileOf(handle), spillText(result), { mode: 0o600, flag: "wx", ...(signal ? { signal } : {}) });
    } catch (err) {
      throw new AbridgeError(ErrorCode.CACHE_IO, `cannot keep the full output in ${this.dir}: ${messageOf(err)}`, { cause: err });
    }
    if (!this.pruned) {
      this.pruned = true;
      await this.prune();
    }
    return handle;
  }

  /**
   * Reads up to `maxBytes` from byte `offset`, never splitting a UTF-8 character: a start inside
   * one moves forward to the next character, an end inside one moves back.
   *
   * @throws AbridgeError INPUT_INVALID for a malformed or unknown handle or an offset past the end.
   */
  async read(handle: string, offset: number, maxBytes: number): Promise<SpillPage> {
    if (!HANDLE_PATTERN.test(handle)) throw new AbridgeError(ErrorCode.INPUT_INVALID, `read_output: "${handle}" is not an output handle`);
    if (!Number.isInteger(offset) || offset < 0) throw new AbridgeError(ErrorCode.INPUT_INVALID, "read_output: offset must be a whole number >= 0");
    let file;
    try {
      file = await open(this.fileOf(handle), "r");
    } catch (err) {
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `read_output: no output with handle ${handle} (expired or never kept)`, { cause: err });
    }
    try {
      const totalBytes = (await file.stat()).size;
      if (offset > totalBytes) throw new AbridgeError(ErrorCode.INPUT_INVALID, `read_output: offset ${offset} is past the end (${totalBytes} bytes)`);
      // Three spare bytes on each side to find character boundaries.
      const want = Math.min(maxBytes + 3, totalBytes - offset);
      const buffer = Buffer.alloc(want);
      const { bytesRead } = await file.read(buffer, 0, want, offset);
      let start = 0;
      while (start < bytesRead && isContinuation(buffer[start]!)) start++;
      let end = Math.min(bytesRead, start + maxBytes);
      if (end < bytesRead) while (end > start && isContinuation(buffer[end]!)) end--;
      const nextOffset = offset + end;
      return {
        text: buffer.subarray(start, end).toString("utf8"),
        offset: offset + start,
        nextOffset: nextOffset >= totalBytes ? undefined : nextOffset,
        totalBytes,
      };
    } finally {
      await file.close();
    }
  }

  private fileOf(handle: string): string {
    return path.join(this.dir, `${handle}.txt`);
  }

  /** Deletes outputs older than the retention; failures only logged (the next run tries again). */
  private async prune(): Promise<void> {
    try {
      const now = Date.now();
      for (const name of await readdir(this.dir)) {
        if (!/^[0-9a-f]{32}\.txt$/.test(name)) continue;
        const file = path.join(this.dir, name);
        const info = await stat(file).catch(() => undefined);
        if (info && now - info.mtimeMs > this.retentionMs) await rm(file, { force: true });
      }
    } catch (err) {
      this.logger.warn("pruning spilled outputs failed", { dir: this.dir, error: messageOf(err) });
    }
  }
}

/** True for a UTF-8 continuation byte (10xxxxxx). */
function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}
