import { createHash } from "node:crypto";
import { mkdir, open } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { canonicalJson } from "../catalog/toolHash.js";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";

/** How a call ended, as the audit log records it. */
export type AuditOutcome = "ok" | "tool_error" | "refused" | "invalid_arguments" | "error" | "cancelled";

/** One call, as it is handed to {@link AuditLog.record}. */
export interface AuditEvent {
  /** Who called: the front end's name for its client (`stdio`, `http:127.0.0.1`, `daemon`, `cli`). */
  client?: string;
  server: string;
  tool: string;
  args: unknown;
  outcome: AuditOutcome;
  durationMs: number;
  /** The setting that refused the call (`servers.fs.read_only`), for `refused`. */
  rule?: string;
  /** Error code for `error`/`cancelled`. */
  errorCode?: string;
  /** For a call a program made (`run_code`): the run's id and the `sha256:` of the program's text. */
  run?: AuditRun;
}

/** The program run a call came from. */
export interface AuditRun {
  id: string;
  program: string;
}

/** One line of the audit log. */
export interface AuditRecord {
  time: string;
  client?: string;
  server: string;
  tool: string;
  /** `sha256:` of the canonical JSON of the arguments: equal arguments, equal hash. */
  argsHash: string;
  /** UTF-8 bytes of the canonical JSON of the arguments. */
  argsBytes: number;
  outcome: AuditOutcome;
  durationMs: number;
  rule?: string;
  errorCode?: string;
  /** The run id of a program's call (see {@link AuditEvent.run}). */
  run?: string;
  /** `sha256:` of the program that made the call. */
  program?: string;
  /** Only with `audit_arguments = true`. */
  arguments?: unknown;
}

/** Options of {@link AuditLog.open}. */
export interface AuditLogOptions {
  file: string;
  /** `audit_arguments`: write argument values too (default false: hash and size only). */
  includeArguments?: boolean;
  logger?: Logger;
}

/** Hash and size of call arguments over their canonical JSON (key order does not matter). */
export function argumentDigest(args: unknown): { argsHash: string; argsBytes: number } {
  let text: string;
  try {
    text = canonicalJson(args ?? {});
  } catch {
    // Arguments came through JSON, so this is only reachable from library callers.
    text = String(args);
  }
  return { argsHash: `sha256:${createHash("sha256").update(text).digest("hex")}`, argsBytes: Buffer.byteLength(text) };
}

/**
 * The audit log: one JSON line per call, appended with one `write` on an `O_APPEND` descriptor,
 * so lines from several processes sharing the file never interleave. Writes are queued in order;
 * a failing write is logged and counted, never turned into a failed call.
 */
export class AuditLog {
  private readonly file: string;
  private readonly handle: FileHandle;
  private readonly includeArguments: boolean;
  private readonly logger: Logger;
  private tail: Promise<void> = Promise.resolve();
  private closed = false;
  /** Lines that could not be written. */
  writeErrors = 0;

  private constructor(file: string, handle: FileHandle, options: AuditLogOptions) {
    this.file = file;
    this.handle = handle;
    this.includeArguments = options.includeArguments ?? false;
    this.logger = options.logger ?? silentLogger;
  }

  /**
   * Opens (creating, mode 0600) the log for appending.
   *
   * @throws AbridgeError CACHE_IO when the file cannot be opened.
   */
  static async open(options: AuditLogOptions): Promise<AuditLog> {
    try {
      await mkdir(path.dirname(options.file), { recursive: true });
      const handle = await open(options.file, "a", 0o600);
      return new AuditLog(options.file, handle, options);
    } catch (err) {
      throw new AbridgeError(ErrorCode.CACHE_IO, `cannot open audit log ${options.file}: ${messageOf(err)}`, { cause: err });
    }
  }

  /** Builds the line of `event` (no argument values unless configured). */
  toRecord(event: AuditEvent, now = new Date()): AuditRecord {
    const record: AuditRecord = {
      time: now.toISOString(),
      ...(event.client !== undefined ? { client: event.client } : {}),
      server: event.server,
      tool: event.tool,
      ...argumentDigest(event.args),
      outcome: event.outcome,
      durationMs: Math.round(event.durationMs),
      ...(event.rule !== undefined ? { rule: event.rule } : {}),
      ...(event.errorCode !== undefined ? { errorCode: event.errorCode } : {}),
      ...(event.run !== undefined ? { run: event.run.id, program: event.run.program } : {}),
    };
    if (this.includeArguments) record.arguments = event.args ?? {};
    return record;
  }

  /** Appends one line; resolves when it is written (or the failure logged). Never rejects. */
  record(event: AuditEvent): Promise<void> {
    if (this.closed) return Promise.resolve();
    const line = `${JSON.stringify(this.toRecord(event))}\n`;
    this.tail = this.tail.then(async () => {
      try {
        await this.handle.write(line);
      } catch (err) {
        this.writeErrors += 1;
        this.logger.warn("audit log write failed", { file: this.file, error: messageOf(err) });
      }
    });
    return this.tail;
  }

  /** Waits for queued lines, then closes the file. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail;
    await this.handle.close().catch(() => undefined);
  }
}
