import { constants, type Stats } from "node:fs";
import { open } from "node:fs/promises";

/**
 * Why {@link readRegularFile} gave no text. The message is the file's own problem, phrased to
 * follow the file's name (`/etc/x.json: it is a FIFO, not a regular file`); it never holds any of
 * the file's bytes.
 */
export class FileReadError extends Error {
  constructor(
    message: string,
    /** The errno code when the system refused (`ENOENT`, `EACCES`); undefined for a refusal of ours. */
    readonly code?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "FileReadError";
  }
}

/** Options of {@link readRegularFile}. */
export interface ReadRegularFileOptions {
  /** Refuse a symbolic link as the last part of the path (`cannot read it (ELOOP)`). */
  noFollow?: boolean;
}

/** Bytes asked for per read once the file's stated size has been read. */
const READ_CHUNK_BYTES = 64 * 1024;

/**
 * Reads a configuration-like file (a recorded tool list, a manifest) as UTF-8, refusing anything
 * but a regular file of at most `maxBytes`. Opened with `O_NONBLOCK`, so a FIFO (or a device) does
 * not hold the open until someone writes to it: an open that blocks ties up one of libuv's four
 * threads for good, and four of them stop every file operation of the process. The checks are
 * made on the open descriptor (the file checked is the file read), and the bound holds for the
 * bytes actually read, not only for the stated size (a file under /proc states 0 bytes; a file
 * may grow while it is read).
 *
 * @throws FileReadError naming what is wrong: cannot read it (the errno code), not a regular file
 *   (what it is), or over `maxBytes`.
 */
export async function readRegularFile(file: string, maxBytes: number, options: ReadRegularFileOptions = {}): Promise<string> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | (options.noFollow === true ? constants.O_NOFOLLOW : 0));
  } catch (err) {
    throw unreadable(err);
  }
  try {
    let info: Stats;
    try {
      info = await handle.stat();
    } catch (err) {
      throw unreadable(err);
    }
    if (!info.isFile()) throw new FileReadError(`it is ${fileKind(info)}, not a regular file`);
    if (info.size > maxBytes) throw new FileReadError(`it is ${info.size} bytes, over the ${maxBytes}-byte limit`);
    const chunks: Buffer[] = [];
    let total = 0;
    // The first read asks for the stated size and one byte more, so a file read whole ends at the
    // second read, which finds nothing.
    let want = Math.min(maxBytes + 1, Math.max(info.size + 1, READ_CHUNK_BYTES));
    for (;;) {
      const buffer = Buffer.allocUnsafe(want);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(buffer, 0, want, null));
      } catch (err) {
        throw unreadable(err);
      }
      if (bytesRead === 0) break;
      chunks.push(buffer.subarray(0, bytesRead));
      total += bytesRead;
      if (total > maxBytes) throw new FileReadError(`it holds more than ${maxBytes} bytes, over the limit`);
      want = Math.min(maxBytes + 1 - total, READ_CHUNK_BYTES);
    }
    return Buffer.concat(chunks, total).toString("utf8");
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function unreadable(err: unknown): FileReadError {
  const code = (err as NodeJS.ErrnoException).code;
  return new FileReadError(`cannot read it${code !== undefined ? ` (${code})` : ""}`, code, { cause: err });
}

/** What a file that is not a regular file is, for a message. */
export function fileKind(info: Stats): string {
  if (info.isFIFO()) return "a FIFO";
  if (info.isDirectory()) return "a directory";
  if (info.isSocket()) return "a socket";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "a device";
  if (info.isSymbolicLink()) return "a symbolic link";
  return "an unknown kind of file";
}
