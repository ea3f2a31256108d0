import { mkdir, open, stat } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import type { Logger } from "../log/logger.js";
import { errnoCode, isMissing, RETRYABLE_IO } from "./cacheIo.js";

/** How often an append is written again to a file that replaced the one it went to. */
const REWRITE_ATTEMPTS = 5;

interface FileIdentity {
  dev: number;
  ino: number;
}

function sameFile(a: FileIdentity | undefined, b: FileIdentity | undefined): boolean {
  return a !== undefined && b !== undefined && a.ino === b.ino && a.dev === b.dev;
}

/**
 * The write side of the summary cache file: appends whole lines so that several processes can
 * share one file, each line as exactly one `write` on an `O_APPEND` descriptor. Calls must not
 * overlap (the store runs them one at a time, in order).
 */
export class CacheAppender {
  /** Lines written. */
  appended = 0;
  /** Writes that failed. */
  writeErrors = 0;

  private handle: FileHandle | undefined;
  private identity: FileIdentity | undefined;
  /**
   * Whether the next append must look for a torn last line first. Only after (re)opening the file
   * or a failed write: lines written by abridge always end in a newline, and checking before every
   * append would race with other processes' writes in progress and add needless blank lines.
   */
  private checkTail = true;

  constructor(
    private readonly file: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Appends `line` (newline-terminated) to the file the path names now.
   *
   * @throws AbridgeError CACHE_IO when the write fails (the line may be lost).
   */
  async write(line: string, key: string): Promise<void> {
    try {
      const handle = await this.handleForAppend();
      let prefix = "";
      if (this.checkTail) {
        // A torn last line (crash, full disk) must not swallow this one: start a fresh line.
        if (await endsTorn(handle)) prefix = "\n";
        this.checkTail = false;
      }
      // Exactly one write call: O_APPEND makes it atomic with respect to the end-of-file offset, so
      // lines from several processes never interleave. Retrying the rest of a short write would be a
      // second call that another process could interleave with, so a short write is an error.
      await writeOnce(handle, Buffer.from(prefix + line));
      // A compaction may have renamed a new file over the path just before this write landed in
      // the old one, after its copy of what arrived late: the line would be lost with the old file.
      // Still the same file after the write means the rename comes later and the copy takes it.
      for (let again = 0; again < REWRITE_ATTEMPTS && !(await this.pathStillOpen()); again++) {
        await writeOnce(await this.handleForAppend(), Buffer.from(line));
      }
      this.appended += 1;
    } catch (err) {
      this.writeErrors += 1;
      // A failed or short write may have left a partial line behind.
      this.checkTail = true;
      await this.close();
      const code = errnoCode(err);
      this.logger.warn("could not append to the summary cache; the entry is served from memory only", {
        key,
        code,
        error: messageOf(err),
      });
      throw new AbridgeError(ErrorCode.CACHE_IO, `cannot append to cache ${this.file}: ${messageOf(err)}`, {
        cause: err,
        retryable: RETRYABLE_IO.has(code ?? ""),
        details: { key, ...(code === undefined ? {} : { errno: code }) },
      });
    }
  }

  /** Releases the descriptor; the next write opens the file again. */
  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    if (handle !== undefined) await handle.close().catch(() => undefined);
  }

  /** Whether the path still names the file the append descriptor writes to. */
  private async pathStillOpen(): Promise<boolean> {
    const current = await stat(this.file).catch(() => undefined);
    return sameFile(current, this.identity);
  }

  /** Opens (or re-opens, when the path now names another file) the append descriptor. */
  private async handleForAppend(): Promise<FileHandle> {
    if (this.handle !== undefined) {
      let current: FileIdentity | undefined;
      try {
        current = await stat(this.file);
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
      if (sameFile(current, this.identity)) return this.handle;
      // Replaced by a compaction or deleted: appending to the old inode would lose the line.
      await this.close();
    }
    await mkdir(dirname(this.file), { recursive: true });
    // "a+" is O_RDWR | O_APPEND | O_CREAT: every write lands at the end whatever other processes
    // wrote, and the descriptor can also read the last byte to detect a torn line.
    const handle = await open(this.file, "a+");
    try {
      const info = await handle.stat();
      this.identity = { dev: info.dev, ino: info.ino };
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
    this.handle = handle;
    this.checkTail = true;
    return handle;
  }
}

async function writeOnce(handle: FileHandle, bytes: Buffer): Promise<void> {
  const { bytesWritten } = await handle.write(bytes, 0, bytes.length, null);
  if (bytesWritten !== bytes.length) {
    throw Object.assign(new Error(`short write: ${bytesWritten} of ${bytes.length} bytes`), { code: "EIO" });
  }
}

/**
 * Whether the file's last byte is not a newline. A different process's write can be caught half
 * done (a write spanning pages grows the size page by page), so a missing newline only counts when
 * a second look sees the same size: a torn line stays, a write in progress moves on.
 */
async function endsTorn(handle: FileHandle): Promise<boolean> {
  const last = Buffer.alloc(1);
  let previousSize = -1;
  for (let look = 0; look < 3; look++) {
    const { size } = await handle.stat();
    if (size === 0) return false;
    const { bytesRead } = await handle.read(last, 0, 1, size - 1);
    if (bytesRead === 1 && last[0] === 0x0a) return false;
    if (size === previousSize) return true;
    previousSize = size;
  }
  return true;
}
