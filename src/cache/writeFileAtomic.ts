import { randomBytes } from "node:crypto";
import { lstat, mkdir, open, readlink, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";

/** Suffix of the temporary files {@link writeFileAtomic} leaves only if it is killed mid-way. */
export const TEMP_SUFFIX = ".tmp";

/**
 * Replaces `file` with `content` so that a reader sees either the old or the new file, never a
 * mix, and a crash leaves one of the two complete: write a uniquely named temp file in the same
 * directory (rename is only atomic within one file system), fsync it, rename it over `file`, then
 * fsync the directory so the rename itself survives a power cut. The old file's mode is kept.
 *
 * A symlink at `file` is written through: the file it points to is replaced, in its own directory,
 * and the link stays. Renaming over the link itself would turn a cache kept elsewhere (a dotfiles
 * repository, another disk) into a local copy that the real file no longer receives.
 */
export async function writeFileAtomic(linkOrFile: string, content: string | Uint8Array, signal?: AbortSignal): Promise<void> {
  const file = await followLinks(linkOrFile);
  const dir = dirname(file);
  await mkdir(dir, { recursive: true });
  let mode = 0o644;
  try {
    mode = (await stat(file)).mode & 0o777;
  } catch {
    // No old file: the default mode.
  }
  // pid + random bytes: two processes compacting at once never share a temp file, and "wx" (O_EXCL)
  // refuses to reuse one left behind by a crash.
  const temp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(6).toString("hex")}${TEMP_SUFFIX}`);
  const handle = await open(temp, "wx", mode);
  let renamed = false;
  try {
    await handle.writeFile(content, signal === undefined ? {} : { signal });
    await handle.chmod(mode);
    await handle.sync();
    await handle.close();
    signal?.throwIfAborted();
    await rename(temp, file);
    renamed = true;
  } finally {
    if (!renamed) {
      await handle.close().catch(() => undefined);
      await rm(temp, { force: true }).catch(() => undefined);
    }
  }
  await syncDirectory(dir);
}

/** Symlinks followed this many times at most (the kernel's own limit is 40). */
const MAX_LINKS = 40;

/**
 * The path `file` finally names after following symlinks, even when the last target does not
 * exist yet (a dangling link is written through too, creating its target).
 */
async function followLinks(file: string): Promise<string> {
  let current = file;
  for (let hops = 0; hops < MAX_LINKS; hops++) {
    let isLink: boolean;
    try {
      isLink = (await lstat(current)).isSymbolicLink();
    } catch {
      // Missing: this is the path to create.
      return current;
    }
    if (!isLink) return current;
    current = resolve(dirname(current), await readlink(current));
  }
  throw Object.assign(new Error(`too many levels of symbolic links: ${file}`), { code: "ELOOP" });
}

/** fsyncs a directory; some platforms and file systems refuse, which only weakens durability. */
async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch {
    // EISDIR/EPERM/EINVAL on platforms without directory fsync: the rename is still atomic.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
