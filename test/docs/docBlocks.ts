/**
 * The fenced code blocks of the README and of every page under docs/, each with the mark on the
 * line right before its opening fence,
 * and what it takes to run them as a reader would: a temp workspace with an `abridge` on PATH that
 * runs this checkout's CLI, temp folders for everything abridge writes, and processes (a bash
 * running a block, a snippet under tsx) whose whole tree is stopped and proven gone afterwards.
 *
 * Marks:
 *   <!-- doc-test: run NAME -->                            a runner of test/docs/docBlocks.test.ts executes it
 *   <!-- doc-test: run NAME (what is not run, and why) -->  the same, for part of the block
 *   <!-- doc-test: illustrative (why it cannot run here) -->
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { abridgeCommand } from "../helpers/abridgeCommand.js";
import { waitFor } from "../helpers/waitFor.js";

export const REPO = path.resolve(import.meta.dirname, "../..");

/**
 * Every file whose blocks are run or checked: the README and each page under docs/ (found, not
 * listed, so a new page is checked from its first commit), relative to the checkout.
 */
export function docFiles(): string[] {
  const pages = readdirSync(path.join(REPO, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", ...pages];
}

/** The text of a doc file named relative to the checkout. */
export function docText(file: string): string {
  return readFileSync(path.join(REPO, file), "utf8");
}

/** What the line before a block says about it. */
export type BlockMark =
  | { kind: "run"; name: string; note?: string }
  | { kind: "illustrative"; reason: string }
  /** A `doc-test:` comment that is neither form (a typo): reported, never taken as a mark. */
  | { kind: "malformed"; text: string };

/** One fenced block of a doc file. */
export interface DocBlock {
  /** The file it is in, relative to the checkout (`README.md`, `docs/fleet.md`). */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string after the fence (`sh`, `ts`, `toml`, `json`, or empty). */
  lang: string;
  /** The lines between the fences, with a final newline. */
  text: string;
  mark: BlockMark | undefined;
}

export const MARK_PREFIX = "<!-- doc-test:";
const RUN_MARK = /^<!-- doc-test: run ([a-z0-9][a-z0-9-]*)(?: \((.+)\))? -->$/;
const ILLUSTRATIVE_MARK = /^<!-- doc-test: illustrative \((.+)\) -->$/;

function parseMark(line: string | undefined): BlockMark | undefined {
  const text = line?.trim() ?? "";
  if (!text.startsWith(MARK_PREFIX)) return undefined;
  const run = RUN_MARK.exec(text);
  if (run) return { kind: "run", name: run[1]!, ...(run[2] !== undefined ? { note: run[2] } : {}) };
  const illustrative = ILLUSTRATIVE_MARK.exec(text);
  if (illustrative) return { kind: "illustrative", reason: illustrative[1]! };
  return { kind: "malformed", text };
}

/** Every fenced block of `markdown`, the text of `file` (fences at the start of a line), in order. */
export function docBlocks(markdown: string, file: string): DocBlock[] {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((line, j) => j > i && /^```\s*$/.test(line));
    if (end < 0) throw new Error(`${file}:${i + 1}: a code block that is never closed`);
    blocks.push({ file, line: i + 1, lang: open[1]!, text: `${lines.slice(i + 1, end).join("\n")}\n`, mark: parseMark(lines[i - 1]) });
    i = end;
  }
  return blocks;
}

/** `text` with `from` replaced by `to`, failing when `from` is not in it: a substitution never silently misses. */
export function substitute(text: string, from: string | RegExp, to: string): string {
  const found = typeof from === "string" ? text.includes(from) : new RegExp(from.source, from.flags.replace("g", "")).test(text);
  if (!found) throw new Error(`expected ${String(from)} in:\n${text}`);
  return typeof from === "string" ? text.split(from).join(to) : text.replace(from, to);
}

/** A snippet's import of the package ("abridge", or the scoped name) pointed at this checkout's source. */
export function importFromCheckout(snippet: string): string {
  return substitute(snippet, /from "(?:@abridge-mcp\/)?abridge"/g, `from ${JSON.stringify(path.join(REPO, "src", "index.ts"))}`);
}

/** Live pids (other than this process) whose command line or environment contains `text`. */
export function pidsCarrying(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(text) || readFileSync(`/proc/${entry}/environ`, "utf8").includes(text))
        pids.push(Number(entry));
    } catch {
      // Ended while we looked, or another user's.
    }
  }
  return pids;
}

/** How a process ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * A child in a process group of its own (a shell's background jobs share it), its output kept,
 * with waits on that output and on its end: each checked again whenever output or the end
 * arrives, never on a clock (the timeouts are hang guards).
 */
export class Proc {
  stdout = "";
  stderr = "";
  /** Set when the child itself exited (background jobs of a shell may live on). */
  exit: Exit | undefined;
  /** Set once its output pipes closed: no process that shares them is left, nothing more can arrive. */
  closed = false;
  private readonly child: ChildProcess;
  private readonly exitPromise: Promise<Exit>;
  private readonly closePromise: Promise<Exit>;
  private readonly waiters = new Set<() => void>();

  constructor(command: string, args: readonly string[], options: { cwd: string; env: Record<string, string> }) {
    this.child = spawn(command, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdin!.on("error", () => undefined);
    this.child.stdout!.on("data", (chunk: Buffer) => {
      this.stdout += chunk.toString("utf8");
      this.wake();
    });
    this.child.stderr!.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString("utf8");
      this.wake();
    });
    const failed = new Promise<Exit>((resolve) =>
      this.child.once("error", (err) => {
        this.stderr += `\nspawn failed: ${err.message}`;
        resolve({ code: null, signal: null });
      }),
    );
    this.exitPromise = Promise.race([failed, new Promise<Exit>((resolve) => this.child.once("exit", (code, signal) => resolve({ code, signal })))]).then(
      (exit) => {
        this.exit = exit;
        this.wake();
        return exit;
      },
    );
    this.closePromise = Promise.race([failed, new Promise<Exit>((resolve) => this.child.once("close", (code, signal) => resolve({ code, signal })))]).then(
      (exit) => {
        this.exit ??= exit;
        this.closed = true;
        this.wake();
        return exit;
      },
    );
  }

  /** `bash -c script`. */
  static bash(script: string, options: { cwd: string; env: Record<string, string> }): Proc {
    return new Proc("bash", ["-c", script], options);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Both outputs and the exit so far, for failure messages. */
  describe(): string {
    return `exit: ${JSON.stringify(this.exit)}\n--- stdout ---\n${this.stdout.slice(-4000)}\n--- stderr ---\n${this.stderr.slice(-4000)}`;
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /**
   * Resolves with `test`'s first non-undefined value, checked now and on every output and on the
   * end; rejects once the output closed without it, or after `timeoutMs` (a hang guard).
   */
  until<T>(test: (proc: Proc) => T | undefined, what: string, timeoutMs = 120_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      const check = (): void => {
        const value = test(this);
        if (value !== undefined) {
          done();
          resolve(value);
        } else if (this.closed) {
          done();
          reject(new Error(`ended before ${what}\n${this.describe()}`));
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${this.describe()}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** The child's own exit (background jobs may live on); rejects after `timeoutMs`, a hang guard. */
  exited(what: string, timeoutMs = 120_000): Promise<Exit> {
    return guard(this.exitPromise, `${what} to exit by itself`, timeoutMs, () => this.describe());
  }

  /** The exit and the end of its output: every process holding its pipes is gone. */
  finished(what: string, timeoutMs = 120_000): Promise<Exit> {
    return guard(this.closePromise, `${what} to exit by itself and close its output`, timeoutMs, () => this.describe());
  }

  /** Writes to its stdin. */
  send(text: string): void {
    this.child.stdin!.write(text);
  }

  /** Ends its stdin. */
  endInput(): void {
    this.child.stdin!.end();
  }

  /** SIGTERM to its process group (a shell's background jobs included); resolves once its output closed. */
  async stop(): Promise<Exit> {
    try {
      process.kill(-this.pid, "SIGTERM");
    } catch {
      // The group is gone already.
    }
    return guard(this.closePromise, "the stopped process group to end", 60_000, () => this.describe());
  }
}

function guard<T>(promise: Promise<T>, what: string, timeoutMs: number, detail: () => string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${detail()}`)), timeoutMs);
    void promise.then((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

/** The JSON-RPC messages a process wrote on stdout, one per line (other lines skipped). */
export function jsonLines(text: string): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      messages.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // Not a message (a table row that starts with a brace, a cut line).
    }
  }
  return messages;
}

/**
 * A reader's machine in a temp folder: `bin/abridge` runs this checkout's CLI, and cache, state and
 * the XDG folders lie inside, so nothing lands in the checkout or the home folder. Every process a
 * block starts carries the folder's path (its environment is derived from `env`, and abridge hands
 * its config's path to the servers it starts), which is how {@link close} proves them all gone.
 */
export class Workspace {
  readonly env: Record<string, string>;
  private readonly procs: Proc[] = [];

  private constructor(readonly dir: string) {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && !entry[0].startsWith("ABRIDGE_")),
    );
    this.env = {
      ...inherited,
      PATH: `${path.join(dir, "bin")}${path.delimiter}${process.env.PATH ?? ""}`,
      XDG_CONFIG_HOME: path.join(dir, "xdg-config"),
      XDG_CACHE_HOME: path.join(dir, "xdg-cache"),
      XDG_STATE_HOME: path.join(dir, "xdg-state"),
      ABRIDGE_CACHE_DIR: path.join(dir, "cache"),
      ABRIDGE_STATE_DIR: path.join(dir, "state"),
    };
  }

  static async create(): Promise<Workspace> {
    const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-docs-"));
    await mkdir(path.join(dir, "bin"));
    const { command, args } = abridgeCommand([]);
    const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const shim = path.join(dir, "bin", "abridge");
    await writeFile(shim, `#!/bin/sh\nexec ${[command, ...args].map(quote).join(" ")} "$@"\n`);
    await chmod(shim, 0o755);
    return new Workspace(dir);
  }

  /** Runs `script` with bash in `cwd` (default: the workspace). */
  bash(script: string, cwd = this.dir): Proc {
    return this.track(Proc.bash(script, { cwd, env: this.env }));
  }

  /** Runs a TypeScript file as a host program would (Node with the tsx loader), from the checkout. */
  async typescript(name: string, code: string): Promise<Proc> {
    const file = path.join(this.dir, name);
    await writeFile(file, code);
    const { command, args } = abridgeCommand([]);
    // abridgeCommand is [node, --import, <tsx>, <cli>]: the same loader, this file instead of the CLI.
    return this.track(new Proc(command, [...args.slice(0, -1), file], { cwd: REPO, env: this.env }));
  }

  /**
   * Writes `abridge.toml`: examples/abridge.toml (the bundled published servers), `top` put before
   * it, each server run in examples/ as it is from there (so npx finds the installed packages and
   * needs no network).
   */
  async exampleConfig(top = "", file = path.join(this.dir, "abridge.toml")): Promise<string> {
    const example = await readFile(path.join(REPO, "examples", "abridge.toml"), "utf8");
    const withCwd = example.replace(/^\[servers\.[^\]]+\]$/gm, (header) => `${header}\ncwd = ${JSON.stringify(path.join(REPO, "examples"))}`);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `${top}${withCwd}`);
    return file;
  }

  private track(proc: Proc): Proc {
    this.procs.push(proc);
    return proc;
  }

  /**
   * Stops what is still running (SIGTERM to each process group), waits until no process carries
   * the folder's path, kills what does after a generous wait, removes the folder. Returns the pids
   * that had to be killed: `[]` when every process ended as it should.
   */
  async close(): Promise<number[]> {
    // Every group, also of a shell that exited: its background jobs may still run.
    await Promise.all(this.procs.filter((p) => !p.closed).map((p) => p.stop().catch(() => undefined)));
    // No event announces the end of a grandchild in another process group: polled, as a hang
    // guard. What is left after it is killed and returned.
    await waitFor(() => pidsCarrying(this.dir).length === 0, { what: "the workspace's processes to end", timeoutMs: 30_000, intervalMs: 50 }).catch(
      () => undefined,
    );
    const left = pidsCarrying(this.dir);
    for (const pid of left) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone in between.
      }
    }
    await rm(this.dir, { recursive: true, force: true });
    return left;
  }
}
