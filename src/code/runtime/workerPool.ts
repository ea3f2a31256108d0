/**
 * The threads programs run on: a few worker threads, each running several programs at once, every
 * run in an engine instance of its own (see codeWorker.ts). A thread costs about ten times the
 * memory of an engine instance, so runs share threads: a run goes to the thread with the fewest
 * runs among those not in a long slice of execution (a program looping holds its thread until its
 * deadline); when every thread is full or held that way, another is started, up to `maxThreads`;
 * past that, runs wait. A run placed on a thread that a long slice then holds before the thread
 * begins it can be moved (`WorkerLease.move`): it goes first in line for another thread.
 * `idleThreads` stay started with no run, so a run seldom waits for a thread to start; the others
 * end after `idleTimeoutMs`. A thread with no run does not keep the process alive.
 *
 * The engine's WebAssembly is compiled once per process and shared by every thread.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { Logger } from "../../log/logger.js";
import { silentLogger } from "../../log/logger.js";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import { DEFAULT_CODE_LIMITS } from "./codeLimits.js";
import { PRELUDE_SOURCE } from "./prelude.js";
import type { CompiledWasm, FromWorker, ToWorker, WorkerBoot } from "./workerProtocol.js";

/** Options of a {@link CodeWorkerPool}. */
export interface CodeWorkerPoolOptions {
  /** Threads at most (default 4). */
  maxThreads?: number;
  /**
   * Runs one thread takes at once (default 16); with `maxThreads`, what runs at once, more wait.
   * Fewer per thread cost more memory (a thread is about ten engine instances) and hold fewer runs
   * behind a program that computes: its thread serves the runs beside it only between its slices,
   * at the latest at its deadline.
   */
  runsPerThread?: number;
  /** Threads kept started with no run, ready for the next (default 1). */
  idleThreads?: number;
  /** A thread with no run past `idleThreads` ends after this long (ms, default 30,000). */
  idleTimeoutMs?: number;
  /** Engine instances each thread keeps ready (default 2), so a run seldom waits for one. */
  spareEngines?: number;
  /** An engine whose memory grew past this (bytes, default 24 MiB) is let go after its run, not kept. */
  recycleBytes?: number;
  logger?: Logger;
}

/** A thread in a slice of execution longer than this is held by a program that computes; new runs go elsewhere. */
export const LONG_SLICE_MS = 50;

/** What every worker is started from, made once per process. */
interface EngineAssets {
  /** The worker's code: its file (from a build) or a data: URL of its transpiled source (from source). */
  workerUrl: URL;
  quickjsUrl: string;
  sucraseUrl: string;
  wasmModule: CompiledWasm;
}

let assets: Promise<EngineAssets> | undefined;

/** The WebAssembly API (a global of Node the compiler's lib settings leave undeclared). */
const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<CompiledWasm> } }).WebAssembly;

/** A module's JavaScript as a data: URL a worker can import. */
function dataUrl(js: string): string {
  return `data:text/javascript,${encodeURIComponent(js)}`;
}

async function loadAssets(): Promise<EngineAssets> {
  const require = createRequire(import.meta.url);
  const quickjsPath = require.resolve("quickjs-emscripten");
  const sucrasePath = require.resolve("sucrase");
  const wasmPath = createRequire(quickjsPath).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
  const wasmModule = await wasm.compile(await readFile(wasmPath));
  let workerUrl = new URL("./codeWorker.js", import.meta.url);
  if (import.meta.url.endsWith(".ts")) {
    // From source (tsx, vitest) a worker thread has no TypeScript loader: it gets the worker's
    // source with its types stripped, importing transpile.ts the same way (the one module of the
    // project it imports), node: modules, and quickjs and sucrase by URL.
    const { transform } = await import("sucrase");
    const strip = async (file: string): Promise<string> =>
      transform(await readFile(fileURLToPath(new URL(file, import.meta.url)), "utf8"), { transforms: ["typescript"], disableESTransforms: true }).code;
    const transpile = await strip("./transpile.ts");
    const worker = (await strip("./codeWorker.ts")).replace('from "./transpile.js"', `from ${JSON.stringify(dataUrl(transpile))}`);
    workerUrl = new URL(dataUrl(worker));
  }
  return { workerUrl, quickjsUrl: pathToFileURL(quickjsPath).href, sucraseUrl: pathToFileURL(sucrasePath).href, wasmModule };
}

function engineAssets(): Promise<EngineAssets> {
  assets ??= loadAssets().catch((err: unknown) => {
    assets = undefined;
    throw err;
  });
  return assets;
}

/** A run's hold on its thread. */
export interface WorkerLease {
  /** Sends a message to the run's thread. */
  post(message: ToWorker): void;
  /**
   * When the slice of execution running on the thread now began (epoch ms), 0 between slices.
   * Read from the thread's shared `busy` word: it is current even while the thread computes and
   * answers no message.
   */
  busySince(): number;
  /**
   * True when the thread is held in a long slice and the run would find room elsewhere now: on
   * another thread with room that is not held, on one starting, or on one the pool may still start.
   */
  movable(): boolean;
  /**
   * Gives up this room and resolves with room on another thread, the run first in line; the
   * thread left counts as held until the run has new room. As {@link CodeWorkerPool.acquire}
   * otherwise. The caller makes sure the thread left never begins the run (its `claim` word).
   */
  move(signal?: AbortSignal): Promise<WorkerLease>;
  /** Ends the thread (a run that did not stop in time): every run on it ends. */
  kill(): void;
  /** The run is over: its thread takes another. */
  release(): void;
}

/** Where a run's messages go. */
export interface LeaseHandlers {
  onMessage(message: Extract<FromWorker, { type: "calls" | "done" }>): void;
  onExit(reason: string): void;
}

class PoolThread {
  state: "starting" | "ready" | "gone" = "starting";
  thread: Worker | undefined;
  readonly runs = new Map<number, LeaseHandlers>();
  readonly busy = new BigInt64Array(new SharedArrayBuffer(8));
  idleTimer: NodeJS.Timeout | undefined;
  /** Settles when the thread is first ready, or gone before that. */
  readonly started: Promise<void>;
  markStarted!: () => void;

  constructor() {
    this.started = new Promise((resolve) => {
      this.markStarted = resolve;
    });
  }

  /** True while a slice of execution on it has lasted longer than {@link LONG_SLICE_MS}. */
  held(now: number): boolean {
    const since = Number(Atomics.load(this.busy, 0));
    return since !== 0 && now - since > LONG_SLICE_MS;
  }
}

interface Waiter {
  seq: number;
  handlers: LeaseHandlers;
  /** The thread a moved run left: held, for this run, whatever its `busy` word says. */
  avoid?: PoolThread;
  resolve(lease: WorkerLease): void;
  reject(err: unknown): void;
}

/** Sequence numbers of runs, unique in the process. */
let lastSeq = 0;

/** The next run's sequence number. */
export function nextRunSeq(): number {
  lastSeq = lastSeq >= Number.MAX_SAFE_INTEGER ? 1 : lastSeq + 1;
  return lastSeq;
}

/** A pool of program threads. */
export class CodeWorkerPool {
  private readonly maxThreads: number;
  private readonly runsPerThread: number;
  private readonly idleThreads: number;
  private readonly idleTimeoutMs: number;
  private readonly spareEngines: number;
  private readonly recycleBytes: number;
  private readonly logger: Logger;
  /** Every thread not gone, starting ones included. */
  private readonly threads = new Set<PoolThread>();
  private readonly waiters: Waiter[] = [];
  private closed = false;

  constructor(options: CodeWorkerPoolOptions = {}) {
    this.maxThreads = Math.max(1, options.maxThreads ?? 4);
    this.runsPerThread = Math.max(1, options.runsPerThread ?? 16);
    this.idleThreads = Math.max(0, Math.min(this.maxThreads, options.idleThreads ?? 1));
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
    this.spareEngines = Math.max(0, options.spareEngines ?? 2);
    this.recycleBytes = options.recycleBytes ?? 24 * 1024 * 1024;
    this.logger = options.logger ?? silentLogger;
  }

  /** Threads (starting ones included), those held in a long slice, runs on them, and runs waiting for room. */
  stats(): { threads: number; held: number; runs: number; waiting: number } {
    const now = Date.now();
    let runs = 0;
    let held = 0;
    for (const t of this.threads) {
      runs += t.runs.size;
      if (t.held(now)) held++;
    }
    return { threads: this.threads.size, held, runs, waiting: this.waiters.length };
  }

  /**
   * Compiles the engine and starts `idleThreads` threads; resolves when they are ready. Optional:
   * a run does it on demand, this only takes it off the first run's time.
   */
  async warm(): Promise<void> {
    await engineAssets();
    this.grow();
    await Promise.all([...this.threads].map((t) => t.started));
  }

  /** Room for run `seq` on a thread, as soon as there is some; rejects when `signal` aborts first or the pool is closed. */
  acquire(seq: number, handlers: LeaseHandlers, signal?: AbortSignal): Promise<WorkerLease> {
    return this.wait(seq, handlers, signal, undefined);
  }

  /** {@link acquire}, or for a moved run (`avoid` set): first in line, and never back on `avoid` while another thread can take it. */
  private wait(seq: number, handlers: LeaseHandlers, signal: AbortSignal | undefined, avoid: PoolThread | undefined): Promise<WorkerLease> {
    if (this.closed) return Promise.reject(new AbridgeError(ErrorCode.INTERNAL, "the program runtime is closed"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<WorkerLease>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i !== -1) this.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        seq,
        handlers,
        ...(avoid !== undefined ? { avoid } : {}),
        resolve: (lease) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(lease);
        },
        reject: (err) => {
          signal?.removeEventListener("abort", onAbort);
          reject(err);
        },
      };
      if (avoid !== undefined) this.waiters.unshift(waiter);
      else this.waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.dispatch();
    });
  }

  /**
   * The thread for the next run: the one with the fewest runs among those with room and not held
   * in a long slice (`avoid` counts as held); a held one only when no thread is starting and none
   * can be started.
   */
  private pick(avoid?: PoolThread): PoolThread | undefined {
    const now = Date.now();
    let best: PoolThread | undefined;
    let bestHeld: PoolThread | undefined;
    let starting = 0;
    for (const t of this.threads) {
      if (t.state === "starting") starting++;
      if (t.state !== "ready" || t.runs.size >= this.runsPerThread) continue;
      if (t === avoid || t.held(now)) {
        if (bestHeld === undefined || t.runs.size < bestHeld.runs.size) bestHeld = t;
      } else if (best === undefined || t.runs.size < best.runs.size) {
        best = t;
      }
    }
    if (best !== undefined) return best;
    return starting === 0 && this.threads.size >= this.maxThreads ? bestHeld : undefined;
  }

  /**
   * Gives waiting runs room where there is some, in order, and starts threads for the rest. A
   * moved run that finds none (it may not go back to the thread it left) lets those behind it try.
   */
  private dispatch(): void {
    for (let i = 0; i < this.waiters.length; ) {
      const waiter = this.waiters[i]!;
      const thread = this.pick(waiter.avoid);
      if (thread === undefined) {
        if (waiter.avoid === undefined) break;
        i++;
        continue;
      }
      this.waiters.splice(i, 1);
      waiter.resolve(this.assign(thread, waiter.seq, waiter.handlers));
    }
    this.grow();
  }

  /** True when `from` is held and a run would find room on another thread now (see {@link WorkerLease.movable}). */
  private movable(from: PoolThread): boolean {
    if (this.closed || from.state !== "ready") return false;
    const now = Date.now();
    if (!from.held(now)) return false;
    if (this.threads.size < this.maxThreads) return true;
    for (const t of this.threads) {
      if (t === from) continue;
      if (t.state === "starting") return true;
      if (t.state === "ready" && !t.held(now) && t.runs.size < this.runsPerThread) return true;
    }
    return false;
  }

  private assign(thread: PoolThread, seq: number, handlers: LeaseHandlers): WorkerLease {
    if (thread.idleTimer !== undefined) clearTimeout(thread.idleTimer);
    thread.idleTimer = undefined;
    // An entry of its own per lease: a run moved away and later back to this thread (same seq) is
    // not touched by what its earlier lease does.
    const entry: LeaseHandlers = { onMessage: (m) => handlers.onMessage(m), onExit: (reason) => handlers.onExit(reason) };
    const mine = (): boolean => thread.runs.get(seq) === entry;
    thread.runs.set(seq, entry);
    thread.thread!.ref();
    /** Takes the run off this thread; true when it was on it. */
    const leave = (): boolean => {
      if (!mine()) return false;
      thread.runs.delete(seq);
      if (thread.state === "ready" && thread.runs.size === 0) this.idle(thread);
      return true;
    };
    return {
      post: (message) => {
        if (thread.state === "ready" && mine()) thread.thread!.postMessage(message);
      },
      busySince: () => Number(Atomics.load(thread.busy, 0)),
      movable: () => mine() && this.movable(thread),
      move: (signal) => {
        leave();
        return this.wait(seq, handlers, signal, thread);
      },
      kill: () => {
        if (thread.state === "gone" || !mine()) return;
        this.logger.warn("program thread ended: a run did not stop in time", { runs: thread.runs.size });
        this.gone(thread, "the program's thread was ended: a program beside this one did not stop in time");
        void thread.thread!.terminate();
      },
      release: () => {
        if (leave() && thread.state === "ready") this.dispatch();
      },
    };
  }

  /** Starts threads while runs wait with no room in sight (or fewer than `idleThreads` exist), up to `maxThreads`. */
  private grow(): void {
    if (this.closed) return;
    const now = Date.now();
    let starting = 0;
    let room = 0;
    for (const t of this.threads) {
      if (t.state === "starting") starting++;
      else if (t.state === "ready" && !t.held(now)) room += this.runsPerThread - t.runs.size;
    }
    let missing = Math.max(0, this.waiters.length - room - starting * this.runsPerThread);
    while (this.threads.size < this.maxThreads && (missing > 0 || this.threads.size < this.idleThreads)) {
      missing -= this.runsPerThread;
      const thread = new PoolThread();
      this.threads.add(thread);
      void this.start(thread);
    }
  }

  private async start(thread: PoolThread): Promise<void> {
    let engine: EngineAssets;
    try {
      engine = await engineAssets();
    } catch (err) {
      this.remove(thread);
      this.failWaiters(err);
      return;
    }
    if (thread.state === "gone") return;
    const boot: WorkerBoot = {
      quickjsUrl: engine.quickjsUrl,
      sucraseUrl: engine.sucraseUrl,
      wasmModule: engine.wasmModule,
      prelude: PRELUDE_SOURCE,
      busy: thread.busy.buffer as SharedArrayBuffer,
      spareEngines: this.spareEngines,
      recycleBytes: this.recycleBytes,
      heapBytes: DEFAULT_CODE_LIMITS.memory_mb * 1024 * 1024,
    };
    const worker = new Worker(engine.workerUrl, {
      workerData: boot,
      // The engine's own stack limit (256 KiB) trips long before WebAssembly frames fill 16 MiB.
      resourceLimits: { stackSizeMb: 16 },
    });
    worker.unref();
    thread.thread = worker;
    worker.on("message", (message: FromWorker) => {
      if (message.type === "ready") {
        if (thread.state !== "starting") return;
        thread.state = "ready";
        thread.markStarted();
        this.idle(thread);
        this.dispatch();
      } else {
        thread.runs.get(message.seq)?.onMessage(message);
      }
    });
    worker.on("error", (err) => {
      this.logger.warn("program thread failed", { error: messageOf(err) });
      if (thread.state === "starting") this.failWaiters(err);
      this.gone(thread, `the program's thread failed: ${messageOf(err)}`);
    });
    worker.on("exit", (code) => {
      if (thread.state === "starting") this.failWaiters(new Error(`the thread exited with code ${code} before it was ready`));
      this.gone(thread, `the program's thread exited with code ${code}`);
    });
  }

  /** A thread with no run: unref'd, and ended after `idleTimeoutMs` when more than `idleThreads` exist. */
  private idle(thread: PoolThread): void {
    if (thread.runs.size > 0 || thread.state !== "ready") return;
    thread.thread!.unref();
    if (this.threads.size <= this.idleThreads || thread.idleTimer !== undefined) return;
    thread.idleTimer = setTimeout(() => {
      thread.idleTimer = undefined;
      if (thread.runs.size > 0 || thread.state !== "ready" || this.threads.size <= this.idleThreads) return;
      this.remove(thread);
      void thread.thread!.terminate();
    }, this.idleTimeoutMs);
    thread.idleTimer.unref();
  }

  private failWaiters(err: unknown): void {
    const error = new AbridgeError(ErrorCode.INTERNAL, `the program runtime could not start: ${messageOf(err)}`, { cause: err });
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }

  private remove(thread: PoolThread): void {
    if (thread.idleTimer !== undefined) clearTimeout(thread.idleTimer);
    thread.idleTimer = undefined;
    thread.state = "gone";
    thread.markStarted();
    this.threads.delete(thread);
  }

  /** A thread that ended: its runs end with `reason`, and threads are started for runs still waiting. */
  private gone(thread: PoolThread, reason: string): void {
    if (thread.state === "gone") return;
    const runs = [...thread.runs.values()];
    thread.runs.clear();
    this.remove(thread);
    for (const run of runs) run.onExit(reason);
    this.dispatch();
  }

  /** Ends every thread; runs still going end with an error, and runs waiting for room are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const error = new AbridgeError(ErrorCode.INTERNAL, "the program runtime is closed");
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    const all = [...this.threads];
    for (const t of all) this.gone(t, "the program runtime was closed");
    await Promise.all(all.map((t) => t.thread?.terminate()));
  }
}

let defaultPool: CodeWorkerPool | undefined;

/** The process's shared pool (default options), made on first use. */
export function defaultCodePool(): CodeWorkerPool {
  defaultPool ??= new CodeWorkerPool();
  return defaultPool;
}
