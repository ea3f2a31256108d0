import { randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { link, lstat, open, rename, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { z } from "zod";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import { delay } from "../../model/timers.js";
import { openProvenSocket } from "./daemonProof.js";
import { currentUid, isPidAlive } from "./processInfo.js";

/** Name of the lockfile inside the state directory. */
export const LOCK_FILE_NAME = "abridge.lock";

/** A lock whose heartbeat is older than this many heartbeat intervals is stale. */
export const STALE_HEARTBEATS = 6;

/** A takeover marker older than this was left by a taker that died mid-takeover. */
const TAKEOVER_STALE_MS = 10_000;

/** What the lockfile holds. Read by clients to find and authenticate to the daemon. */
export const lockInfoSchema = z.object({
  pid: z.number().int().positive(),
  /** `127.0.0.1:<port>` or `unix:<path>`. */
  address: z.string().min(1),
  /** Shared secret every request must carry; only readers of the 0600 file know it. */
  token: z.string().min(16),
  /** When the daemon started (ISO 8601). */
  started: z.string(),
  version: z.string(),
  /** Last heartbeat (ISO 8601); refreshed every `heartbeatMs`. */
  heartbeat: z.string(),
  heartbeatMs: z.number().int().positive(),
  /** Absolute path of the config the daemon serves (absent in locks of older daemons). */
  configPath: z.string().optional(),
  /** `sha256:<hex>` of that config's bytes when the daemon read it. */
  configHash: z.string().optional(),
});

/** The lockfile's content. */
export type LockInfo = z.infer<typeof lockInfoSchema>;

/** What reading the lockfile found. */
export type LockRead = { state: "missing" } | { state: "ok"; lock: LockInfo; raw: string } | { state: "corrupt"; raw: string; reason: string };

/** Path of the lockfile of `stateDir`. */
export function lockFilePath(stateDir: string): string {
  return join(stateDir, LOCK_FILE_NAME);
}

/** A fresh random token (256 bits, URL-safe). */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Options of {@link readLock}. */
export interface ReadLockOptions {
  /** The user the lockfile and its directory must belong to (default: this process's). */
  uid?: number;
}

function untrusted(file: string, what: string): AbridgeError {
  return new AbridgeError(
    ErrorCode.DAEMON_LOCK_UNTRUSTED,
    `refusing lockfile ${file}: ${what}. Another user could have written it to receive your calls and token; ` +
      `use a state directory only you can write (mode 0700), or remove the file if it is yours`,
  );
}

/**
 * Refuses a state directory another user could plant a lockfile in: it must belong to `uid` (or
 * root) and not be writable by group or others, unless it is sticky (like /tmp, where others can
 * add files but not replace ours; the lockfile's own owner check then catches theirs).
 */
async function checkStateDir(file: string, uid: number): Promise<void> {
  const dir = dirname(file);
  let info;
  try {
    info = await lstat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw new AbridgeError(ErrorCode.DAEMON_LOCKED, `cannot inspect state directory ${dir}: ${messageOf(err)}`, { cause: err });
  }
  if (info.uid !== uid && info.uid !== 0) throw untrusted(file, `its directory ${dir} belongs to uid ${info.uid}, not to this user (uid ${uid})`);
  const sticky = (info.mode & 0o1000) !== 0; // S_ISVTX
  if ((info.mode & 0o022) !== 0 && !sticky) {
    throw untrusted(
      file,
      `its directory ${dir} is writable by ${(info.mode & 0o002) !== 0 ? "others" : "its group"} (mode 0${(info.mode & 0o777).toString(8)})`,
    );
  }
}

/**
 * Reads and validates the lockfile. The lockfile says where the daemon listens and which token it
 * takes, so a client that trusted any file would hand its calls (arguments, API keys) to whoever
 * wrote it: the file must be a regular file (not a symlink or FIFO; opened without following
 * links or blocking), owned by this user, not writable by group or others (the daemon writes it
 * 0600), in a directory only this user can write. Checked on the open descriptor, so the
 * file read is the file checked.
 *
 * @throws AbridgeError DAEMON_LOCK_UNTRUSTED when any of that does not hold; DAEMON_LOCKED when
 *   the file cannot be read.
 */
export async function readLock(file: string, options: ReadLockOptions = {}): Promise<LockRead> {
  const uid = options.uid ?? currentUid();
  if (uid !== undefined) await checkStateDir(file, uid);
  let raw: string;
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { state: "missing" };
    if (code === "ELOOP") throw untrusted(file, "it is a symbolic link");
    throw new AbridgeError(ErrorCode.DAEMON_LOCKED, `cannot read lockfile ${file}: ${messageOf(err)}`, { cause: err });
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw untrusted(file, `it is not a regular file (${fileKind(info)})`);
    if (info.size > MAX_LOCK_BYTES)
      throw new AbridgeError(ErrorCode.DAEMON_LOCKED, `lockfile ${file} is ${info.size} bytes, not a lockfile; remove it if no daemon is running`);
    if (uid !== undefined && info.uid !== uid) throw untrusted(file, `it belongs to uid ${info.uid}, not to this user (uid ${uid})`);
    // Write bits are what matter for trust (whoever can write it chooses where calls go); the
    // daemon writes 0600, so its token is not readable by others either.
    if (uid !== undefined && (info.mode & 0o022) !== 0) {
      throw untrusted(file, `its mode is 0${(info.mode & 0o777).toString(8)}: writable by group or others (the daemon writes 0600)`);
    }
    raw = await handle.readFile("utf8");
  } catch (err) {
    if (err instanceof AbridgeError) throw err;
    throw new AbridgeError(ErrorCode.DAEMON_LOCKED, `cannot read lockfile ${file}: ${messageOf(err)}`, { cause: err });
  } finally {
    await handle.close();
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    return { state: "corrupt", raw, reason: `invalid JSON: ${messageOf(err)}` };
  }
  const parsed = lockInfoSchema.safeParse(value);
  if (!parsed.success) return { state: "corrupt", raw, reason: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") };
  return { state: "ok", lock: parsed.data, raw };
}

/** A lockfile is a few hundred bytes; anything much larger is not one. */
const MAX_LOCK_BYTES = 64 * 1024;

/** What a non-regular file is, for the error message. */
function fileKind(info: Stats): string {
  if (info.isFIFO()) return "a FIFO";
  if (info.isDirectory()) return "a directory";
  if (info.isSocket()) return "a socket";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "a device";
  return "not a file";
}

/** How staleness is judged; tests pass their own clock or liveness probe. */
export interface StalenessOptions {
  now?: number;
  isAlive?: (pid: number) => boolean;
}

/**
 * True when the lock may no longer stand for a live daemon: its pid is gone, or its heartbeat is
 * older than {@link STALE_HEARTBEATS} intervals (the pid was reused, the daemon hangs, or the
 * machine is so busy that its timer ran late). The clock alone cannot tell the last case from the
 * others: whatever acts on a stale lock asks {@link judgeLock}. The lock and its rewrites are
 * created whole (link/rename of a finished file), so unreadable content is garbage, not a write in
 * progress, and counts as stale.
 */
export function isLockStale(read: LockRead, options: StalenessOptions = {}): boolean {
  if (read.state === "missing") return false;
  if (read.state === "corrupt") return true;
  const alive = options.isAlive ?? isPidAlive;
  if (!alive(read.lock.pid)) return true;
  const beat = Date.parse(read.lock.heartbeat);
  const age = (options.now ?? Date.now()) - beat;
  return !Number.isFinite(beat) || age > read.lock.heartbeatMs * STALE_HEARTBEATS;
}

/**
 * What a lockfile stands for:
 * - `missing`: no lockfile;
 * - `dead`: unreadable, or its pid is gone;
 * - `live`: its heartbeat is recent, or it is late but the holder proved itself at its address;
 * - `hung`: its pid lives, its heartbeat is late and nothing proved to be it at its address in time.
 */
export type LockVerdict = "missing" | "dead" | "live" | "hung";

/** Options of {@link judgeLock}. */
export interface JudgeLockOptions {
  now?: number;
  isAlive?: (pid: number) => boolean;
  /**
   * How long a holder with a late heartbeat gets to answer (default: its heartbeat interval, at
   * least {@link MIN_PROBE_MS}).
   */
  probeTimeoutMs?: number;
}

/** The shortest wait for an answer from a holder whose heartbeat is late. */
export const MIN_PROBE_MS = 5_000;

/**
 * Judges a lock without trusting the clock alone. A late heartbeat is only a sign: on a machine
 * busy enough to delay the holder's timer past {@link STALE_HEARTBEATS} intervals, its pid still
 * lives and it still answers. So a lock whose pid lives and whose heartbeat is late is asked at
 * its address to prove that it holds the lock's token (a `hello`, see daemonProof.ts: the token
 * itself is never sent); the proof makes it `live`, anything else until the timeout (silence, a
 * refused connection, an answer without the proof from whatever holds the address now) `hung`.
 */
export async function judgeLock(read: LockRead, options: JudgeLockOptions = {}): Promise<LockVerdict> {
  if (read.state === "missing") return "missing";
  if (read.state === "corrupt") return "dead";
  const alive = options.isAlive ?? isPidAlive;
  if (!alive(read.lock.pid)) return "dead";
  if (!isLockStale(read, { isAlive: alive, ...(options.now !== undefined ? { now: options.now } : {}) })) return "live";
  const timeoutMs = options.probeTimeoutMs ?? Math.max(MIN_PROBE_MS, read.lock.heartbeatMs);
  return (await holderAnswers(read.lock, timeoutMs)) ? "live" : "hung";
}

/**
 * True when what listens at the lock's address proves that it holds the lock's token (connecting
 * and proving get `timeoutMs` each): liveness of the lock's own daemon is asked, not health. A
 * refused connection, an end or an answer without the proof, or silence is false. The token is
 * never sent.
 */
export async function holderAnswers(lock: LockInfo, timeoutMs: number): Promise<boolean> {
  try {
    const socket = await openProvenSocket(lock, { connectTimeoutMs: timeoutMs, proofTimeoutMs: timeoutMs });
    socket.destroy();
    return true;
  } catch {
    return false;
  }
}

/** Outcome of {@link acquireLock}. */
export type AcquireResult = { acquired: true } | { acquired: false; holder: LockInfo };

/** Options of {@link acquireLock}. */
export interface AcquireOptions extends JudgeLockOptions {
  signal?: AbortSignal;
  /** Attempts before giving up while others keep taking and releasing the lock. */
  maxAttempts?: number;
}

async function writeTemp(file: string, content: string): Promise<string> {
  const temp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  // O_EXCL and 0600 from the start: the token is never readable by others, not even briefly.
  const handle = await open(temp, "wx", 0o600);
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
  return temp;
}

async function removeQuietly(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

/**
 * Takes the lockfile for `lock`, or reports the live daemon that holds it. A lock is taken over
 * when {@link judgeLock} finds it dead or hung, never only because its heartbeat is late.
 *
 * Creation is `link(temp, lock)`: it fails with EEXIST exactly like `open(O_CREAT|O_EXCL)`, but
 * the lock appears with its whole content, so no reader ever sees a half-written file. A stale
 * lock is replaced under a second O_EXCL file (`<lock>.takeover`): the holder re-reads the lock
 * and renames its file over it only if the lock is still the very one it judged stale, so two
 * takers cannot both win and a fresh lock is never replaced.
 */
export async function acquireLock(file: string, lock: LockInfo, options: AcquireOptions = {}): Promise<AcquireResult> {
  const temp = await writeTemp(file, `${JSON.stringify(lock)}\n`);
  const takeover = `${file}.takeover`;
  try {
    for (let attempt = 0; attempt < (options.maxAttempts ?? 100); attempt++) {
      if (options.signal?.aborted) throw new AbridgeError(ErrorCode.CANCELLED, "lock acquisition cancelled", { cause: options.signal.reason });
      try {
        await link(temp, file);
        return { acquired: true };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
          throw new AbridgeError(ErrorCode.DAEMON_LOCKED, `cannot create lockfile ${file}: ${messageOf(err)}`, { cause: err });
        }
      }
      const seen = await readLock(file);
      if (seen.state === "missing") continue;
      if (seen.state === "ok" && (await judgeLock(seen, options)) === "live") return { acquired: false, holder: seen.lock };

      let marker;
      try {
        marker = await open(takeover, "wx", 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        // Another taker is at work; a marker that stays around belongs to one that died.
        const info = await stat(takeover).catch(() => undefined);
        if (info && Date.now() - info.mtimeMs > TAKEOVER_STALE_MS) await removeQuietly(takeover);
        await delay(10 + Math.floor(Math.random() * 40), options.signal);
        continue;
      }
      try {
        await marker.close();
        const again = await readLock(file);
        if (again.state === "missing") continue;
        if (again.state !== seen.state || again.raw !== seen.raw) continue;
        // The same lock as judged above: a late holder was given its chance to answer then.
        await rename(temp, file);
        return { acquired: true };
      } finally {
        await removeQuietly(takeover);
      }
    }
    throw new AbridgeError(ErrorCode.DAEMON_LOCKED, `could not take lockfile ${file}: it keeps changing`, { retryable: true });
  } finally {
    await removeQuietly(temp);
  }
}

/**
 * Rewrites the lock with a new heartbeat if it is still `lock`'s (same token). Returns false when
 * another daemon has taken it over meanwhile: the caller has lost the lock and must stop serving.
 */
export async function refreshLock(file: string, lock: LockInfo): Promise<boolean> {
  const seen = await readLock(file);
  if (seen.state !== "ok" || seen.lock.token !== lock.token) return false;
  const temp = await writeTemp(file, `${JSON.stringify(lock)}\n`);
  try {
    await rename(temp, file);
  } finally {
    await removeQuietly(temp);
  }
  return true;
}

/** Removes the lockfile if it is still the one with `token` (never another daemon's). */
export async function releaseLock(file: string, token: string): Promise<boolean> {
  const seen = await readLock(file).catch(() => ({ state: "missing" }) as const);
  if (seen.state !== "ok" || seen.lock.token !== token) return false;
  await removeQuietly(file);
  return true;
}
