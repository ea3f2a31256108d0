/**
 * A program worker: a thread that runs programs in QuickJS (WebAssembly), several at once, each in
 * an engine instance of its own (its own linear memory, capped at the run's `memory_mb`) and a
 * fresh runtime and context, so runs share nothing but the thread. A program that loops holds this
 * thread (and the runs begun beside it) until its deadline, never the process's event loop; the
 * main thread sees the thread busy through the shared `busy` word, puts new runs on other threads
 * meanwhile, and moves those it posted here that this thread has not begun (see `claim` in
 * workerProtocol.ts: a withdrawn run is dropped here, never begun).
 *
 * The engine's interrupt handler stops a run at its deadline, or at once when the main thread sets
 * the run's stop word. Tool calls leave as messages, batched per slice of execution; their answers
 * come back as JSON and are parsed by the engine's own `JSON.parse` (a `__proto__` key stays a
 * plain key). Besides transpile.ts (which imports nothing) the worker imports nothing of the project
 * at run time (from source it is loaded from a data: URL): what it needs comes in `workerData`.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { CustomizeVariantOptions, QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten";
import { compileProgram, messageOf, PROGRAM_FILE, stackPosition, type Transform } from "./transpile.js";
import type { CallRequest, ConsoleLine, FromWorker, RunMessage, Settlement, ToWorker, WorkerBoot, WorkerOutcome } from "./workerProtocol.js";

/** The file name the engine gives the prelude in stack traces. */
const PRELUDE_FILE = "abridge:prelude";
/**
 * The engine's stack. The thread's own stack (resourceLimits.stackSizeMb) is many times larger, so
 * the engine reports a stack overflow to the program long before WebAssembly exhausts the thread's.
 */
const STACK_BYTES = 256 * 1024;

// Set when the module starts as a worker (see the end of this file); imported anywhere else it
// does nothing.
let boot!: WorkerBoot;
/** When the slice running now began (epoch ms), 0 between slices: the pool reads it. */
let busy!: BigInt64Array;
let quickjs!: typeof import("quickjs-emscripten");
/** Types are stripped here, on the program's thread: a large program costs the event loop nothing. */
let transform!: Transform;

/** Emscripten's own output (it prints on a fault) is dropped: nothing of it is the program's. */
const quiet = { print: () => {}, printErr: () => {} } as object as NonNullable<CustomizeVariantOptions["emscriptenModule"]>;

/** The WebAssembly API (a global of Node the compiler's lib settings leave undeclared). */
const wasm = (globalThis as unknown as { WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory } }).WebAssembly;

/** A WebAssembly.Memory, as far as the worker reads it. */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}

const PAGE_BYTES = 65536;
/** The engine's memory starts at 16 MiB, as its build would make it. */
const INITIAL_PAGES = 256;
/** Room for the engine itself (its data, stack and the system context) beside a run's heap. */
const ENGINE_BYTES = 16 * 1024 * 1024;

/** An engine instance: a QuickJS module on a WebAssembly memory of its own. */
interface Engine {
  module: QuickJSWASMModule;
  memory: WasmMemory;
  /** The heap it was sized for (a run's `memory_mb` in bytes). */
  heapBytes: number;
  /** Its memory's maximum. */
  maxBytes: number;
}

/**
 * An engine instance whose WebAssembly memory cannot grow past `heapBytes` plus the engine's own
 * room. QuickJS's memory limit alone does not hold under Emscripten (it counts allocations, not
 * their sizes: many large strings or typed arrays pass it), so this is the bound that holds: past
 * it malloc fails, and the engine throws "out of memory".
 */
async function newEngine(heapBytes: number): Promise<Engine> {
  const maximum = Math.max(INITIAL_PAGES, Math.ceil((heapBytes + ENGINE_BYTES) / PAGE_BYTES));
  const memory = new wasm.Memory({ initial: INITIAL_PAGES, maximum });
  const module = await quickjs.newQuickJSWASMModuleFromVariant(
    quickjs.newVariant(quickjs.RELEASE_SYNC, { wasmModule: boot.wasmModule as never, wasmMemory: memory as never, emscriptenModule: quiet }),
  );
  return { module, memory, heapBytes, maxBytes: maximum * PAGE_BYTES };
}

/** Engines ready for the next runs (a run takes one; one whose memory stayed small comes back). */
const spares: Engine[] = [];
/** Engines being made for `spares`. */
let making = 0;
/** The heap size spares are made for: the last run's. */
let spareHeapBytes = 0;

/** Makes spares until `boot.spareEngines` of the current size are ready or being made. */
function refill(): void {
  const ready = spares.filter((e) => e.heapBytes === spareHeapBytes).length;
  for (let n = ready + making; n < boot.spareEngines; n++) {
    making++;
    newEngine(spareHeapBytes)
      .then((engine) => {
        if (engine.heapBytes === spareHeapBytes && spares.length < boot.spareEngines) spares.push(engine);
      })
      .catch(() => {})
      .finally(() => {
        making--;
      });
  }
}

/** An engine for a run's heap: a spare of that size, or a new one. */
async function takeEngine(heapBytes: number): Promise<Engine> {
  if (heapBytes !== spareHeapBytes) {
    spareHeapBytes = heapBytes;
    for (let i = spares.length - 1; i >= 0; i--) if (spares[i]!.heapBytes !== heapBytes) spares.splice(i, 1);
  }
  const i = spares.findIndex((e) => e.heapBytes === heapBytes);
  const engine = i === -1 ? await newEngine(heapBytes) : spares.splice(i, 1)[0]!;
  refill();
  return engine;
}

/** After a run: its engine is kept for another when it is sound and its memory stayed small, else let go. */
function giveBack(engine: Engine, broken: boolean): void {
  if (!broken && engine.memory.buffer.byteLength <= boot.recycleBytes && engine.heapBytes === spareHeapBytes && spares.length < boot.spareEngines) {
    spares.push(engine);
  }
  refill();
}

const runs = new Map<number, Run>();

function post(message: FromWorker): void {
  parentPort!.postMessage(message);
}

/** Runs `fn` as one slice of execution, marked in the `busy` word while it lasts. */
function slice(fn: () => void): void {
  Atomics.store(busy, 0, BigInt(Date.now()));
  try {
    fn();
  } finally {
    Atomics.store(busy, 0, 0n);
  }
}

/**
 * True when an engine's memory cannot grow any more. Emscripten grows memory by at least 5% at a
 * time, so the last 5% under the maximum is never reached. Out of memory there, the engine cannot
 * even make the error it throws and throws null instead.
 */
function memoryFull(engine: Engine): boolean {
  return engine.memory.buffer.byteLength * 1.06 >= engine.maxBytes;
}

/**
 * An outcome the engine's memory running out made: an error it could not allocate is thrown as
 * null, and what describes a failure may fail to allocate too.
 */
function outOfMemory(engine: Engine, outcome: WorkerOutcome): WorkerOutcome {
  if (outcome.kind === "unserializable" && outcome.message === "out of memory") return { kind: "memory" };
  if (!memoryFull(engine)) return outcome;
  if ((outcome.kind === "thrown" && !outcome.error) || outcome.kind === "unserializable" || outcome.kind === "engine") return { kind: "memory" };
  return outcome;
}

/** The outcome an error the engine raised stands for, when it is one of the limits. */
function classify(name: string, message: string): WorkerOutcome | undefined {
  if (message === "out of memory") return { kind: "memory" };
  if (message === "stack overflow" || message === "Maximum call stack size exceeded") return { kind: "stack" };
  if (name === "InternalError" && message === "interrupted") return { kind: "interrupted" };
  return undefined;
}

class Run {
  readonly rt: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  private promise: QuickJSHandle | undefined;
  private parse: QuickJSHandle | undefined;
  private readonly pending = new Map<number, QuickJSDeferredPromise>();
  private outbox: CallRequest[] = [];
  private readonly console: ConsoleLine[] = [];
  private consoleBytes = 0;
  private consoleDropped = 0;
  private nextId = 0;
  ended = false;
  /** The engine may be in an unknown state (a fault inside it): it is let go after this run, never reused. */
  broken = false;

  private readonly stop: Int32Array;

  constructor(
    readonly message: RunMessage,
    readonly engine: Engine,
  ) {
    const stop = new Int32Array(message.stop);
    this.stop = stop;
    const deadline = message.deadline;
    this.rt = engine.module.newRuntime({
      // The engine's own limit counts allocations, not their sizes, under Emscripten; the bound
      // that holds is the WebAssembly memory's maximum (see newEngine), so this one matches it.
      memoryLimitBytes: engine.maxBytes,
      maxStackSizeBytes: STACK_BYTES,
      interruptHandler: () => Atomics.load(stop, 0) !== 0 || Date.now() >= deadline,
    });
    this.ctx = this.rt.newContext();
  }

  stopRequested(): boolean {
    return Atomics.load(this.stop, 0) !== 0 || Date.now() >= this.message.deadline;
  }

  begin(): void {
    const compiled = compileProgram(transform, this.message.code);
    if (!compiled.ok) {
      if (compiled.tooDeep) this.finish({ kind: "stack" });
      else this.finish({ kind: "syntax", message: compiled.message, ...(compiled.position !== undefined ? { position: compiled.position } : {}) });
      return;
    }
    const { ctx } = this;
    const json = ctx.getProp(ctx.global, "JSON");
    this.parse = ctx.getProp(json, "parse");
    json.dispose();
    const hostCall = ctx.newFunction("call", (tool, args) => this.hostCall(tool, args));
    const hostLog = ctx.newFunction("log", (level, text) => {
      this.log(ctx.getString(level) as ConsoleLine["level"], ctx.getString(text));
    });
    const spec = ctx.newString(this.message.spec);
    const prelude = ctx.evalCode(boot.prelude, PRELUDE_FILE, { type: "global", strict: true });
    if (prelude.error) {
      hostCall.dispose();
      hostLog.dispose();
      spec.dispose();
      this.finishWith(prelude.error);
      return;
    }
    const made = ctx.callFunction(prelude.value, ctx.undefined, hostCall, hostLog, spec);
    prelude.value.dispose();
    hostCall.dispose();
    hostLog.dispose();
    spec.dispose();
    if (made.error) {
      this.finishWith(made.error);
      return;
    }
    const run = made.value;
    const main = ctx.evalCode(compiled.js, PROGRAM_FILE, { type: "global", strict: true });
    if (main.error) {
      run.dispose();
      this.finishWith(main.error);
      return;
    }
    if (ctx.typeof(main.value) !== "function") {
      run.dispose();
      main.value.dispose();
      this.finish({ kind: "thrown", error: true, name: "SyntaxError", message: "the program closes the function it runs in (an unmatched `}`)" });
      return;
    }
    const started = ctx.callFunction(run, ctx.undefined, main.value);
    run.dispose();
    main.value.dispose();
    if (started.error) {
      this.finishWith(started.error);
      return;
    }
    this.promise = started.value;
    this.pump();
  }

  private hostCall(toolHandle: QuickJSHandle, argsHandle: QuickJSHandle): QuickJSHandle {
    const { ctx } = this;
    const tool = ctx.getString(toolHandle);
    const args = ctx.getString(argsHandle);
    const deferred = ctx.newPromise();
    const bytes = Buffer.byteLength(args);
    if (bytes > this.message.maxValueBytes) {
      this.rejectWith(
        deferred,
        "CODE_LIMIT",
        `the arguments of ${tool} are ${bytes} bytes of JSON, over the ${this.message.maxValueBytes} a value may have (a quarter of memory_mb)`,
      );
      return deferred.handle;
    }
    const id = ++this.nextId;
    this.pending.set(id, deferred);
    this.outbox.push({ id, tool, args });
    return deferred.handle;
  }

  private log(level: ConsoleLine["level"], text: string): void {
    const bytes = Buffer.byteLength(text) + 1;
    if (this.consoleBytes + bytes > this.message.maxConsoleBytes) {
      this.consoleDropped++;
      return;
    }
    this.consoleBytes += bytes;
    this.console.push({ level, text });
  }

  private rejectWith(deferred: QuickJSDeferredPromise, code: string, message: string): void {
    const { ctx } = this;
    const failure = ctx.newObject();
    ctx.newString(code).consume((h) => ctx.setProp(failure, "code", h));
    ctx.newString(message).consume((h) => ctx.setProp(failure, "message", h));
    deferred.reject(failure);
    failure.dispose();
  }

  settle(settlements: readonly Settlement[]): void {
    const { ctx } = this;
    for (const settlement of settlements) {
      const deferred = this.pending.get(settlement.id);
      if (deferred === undefined) continue;
      this.pending.delete(settlement.id);
      if (!settlement.ok) {
        this.rejectWith(deferred, settlement.code, settlement.message);
        continue;
      }
      const text = ctx.newString(settlement.json);
      const parsed = ctx.callFunction(this.parse!, ctx.undefined, text);
      text.dispose();
      if (parsed.error) {
        deferred.reject(parsed.error);
        parsed.error.dispose();
      } else {
        deferred.resolve(parsed.value);
        parsed.value.dispose();
      }
    }
    this.pump();
  }

  /** Runs the jobs the engine has queued, then sends the calls they made or ends the run. */
  private pump(): void {
    if (this.ended) return;
    const jobs = this.rt.executePendingJobs(-1);
    if (jobs.error) {
      this.finishWith(jobs.error);
      return;
    }
    const state = this.ctx.getPromiseState(this.promise!);
    if (state.type === "fulfilled") {
      const outcome = this.readOutcome(state.value);
      state.value.dispose();
      this.finish(outcome);
    } else if (state.type === "rejected") {
      this.finishWith(state.error);
    } else if (this.pending.size === 0) {
      this.finish({ kind: "stuck" });
    } else if (this.outbox.length > 0) {
      const calls = this.outbox;
      this.outbox = [];
      post({ type: "calls", seq: this.message.seq, calls });
    }
  }

  private readString(handle: QuickJSHandle, key: string): string {
    const { ctx } = this;
    const value = ctx.getProp(handle, key);
    try {
      return ctx.typeof(value) === "string" ? ctx.getString(value) : "";
    } finally {
      value.dispose();
    }
  }

  /** The descriptor `run` settled with (see the prelude). */
  private readOutcome(descriptor: QuickJSHandle): WorkerOutcome {
    const kind = this.readString(descriptor, "kind");
    if (kind === "value") {
      const json = this.readString(descriptor, "json");
      const bytes = Buffer.byteLength(json);
      return bytes > this.message.maxValueBytes ? { kind: "too-large", bytes } : { kind: "value", json };
    }
    if (kind === "unserializable") return { kind, name: this.readString(descriptor, "name"), message: this.readString(descriptor, "message") };
    if (kind === "thrown") {
      const error = this.ctx.getProp(descriptor, "error").consume((h) => this.ctx.typeof(h) === "boolean" && this.ctx.dump(h) === true);
      if (!error) return { kind, error: false, text: this.readString(descriptor, "text") };
      const name = this.readString(descriptor, "name");
      const message = this.readString(descriptor, "message");
      const classified = classify(name, message);
      if (classified !== undefined) return classified;
      const position = stackPosition(transform, this.message.code, this.readString(descriptor, "stack"));
      const code = this.readString(descriptor, "code");
      const tool = this.readString(descriptor, "tool");
      return {
        kind,
        error: true,
        name,
        message,
        ...(position !== undefined ? { position } : {}),
        ...(code !== "" ? { code } : {}),
        ...(tool !== "" ? { tool } : {}),
      };
    }
    return { kind: "none" };
  }

  /** Ends the run with what the engine raised outside the prelude's catch (a syntax error, an interrupt, a fault). */
  private finishWith(error: QuickJSHandle): void {
    if (this.stopRequested()) {
      error.dispose();
      this.finish({ kind: "interrupted" });
      return;
    }
    let outcome: WorkerOutcome;
    try {
      if (this.ctx.typeof(error) === "object") {
        const name = this.readString(error, "name");
        const message = this.readString(error, "message");
        const position = stackPosition(transform, this.message.code, this.readString(error, "stack"));
        outcome = classify(name, message) ?? { kind: "thrown", error: true, name, message, ...(position !== undefined ? { position } : {}) };
      } else {
        outcome = { kind: "thrown", error: false, text: String(this.ctx.dump(error.dup())) };
      }
    } catch (err) {
      outcome = { kind: "engine", message: messageOf(err) };
    } finally {
      error.dispose();
    }
    this.finish(outcome);
  }

  /**
   * Ends the run: the outcome and console go to the main thread, then the engine's objects are let
   * go. After a fault inside the engine nothing of it is touched again: it is replaced whole.
   */
  finish(outcome: WorkerOutcome, options: { faulted?: boolean } = {}): void {
    if (this.ended) return;
    this.ended = true;
    post({ type: "done", seq: this.message.seq, outcome: outOfMemory(this.engine, outcome), console: this.console, consoleDropped: this.consoleDropped });
    if (options.faulted) this.broken = true;
    else this.dispose();
  }

  /** A fault of the engine itself (a WebAssembly trap, the thread's stack exhausted). */
  fault(err: unknown): void {
    const message = messageOf(err);
    const outcome = classify(err instanceof Error ? err.name : "", message) ?? { kind: "engine", message };
    this.broken = true;
    this.finish(outcome, { faulted: true });
  }

  private dispose(): void {
    try {
      for (const deferred of this.pending.values()) deferred.dispose();
      this.pending.clear();
      this.promise?.dispose();
      this.parse?.dispose();
      this.ctx.dispose();
      this.rt.dispose();
    } catch {
      this.broken = true;
    }
  }
}

/** A run that ended leaves the thread; its engine is kept or let go. */
function settled(run: Run): void {
  if (!run.ended || runs.get(run.message.seq) !== run) return;
  runs.delete(run.message.seq);
  giveBack(run.engine, run.broken);
}

/** A run's `claim` word while this thread has not begun it (see RunMessage in workerProtocol.ts). */
const CLAIM_WAITING = 0;
/** This thread began the run: it stays here. */
const CLAIM_BEGUN = 1;
/** The main thread took the run elsewhere: this thread drops it. */
const CLAIM_WITHDRAWN = -1;

/**
 * Takes a run for this thread: true when it was still waiting (it is now begun here), false when
 * the main thread withdrew it. Nothing of a run is posted before this, so a withdrawn run leaves
 * no trace.
 */
function claim(message: RunMessage): boolean {
  return Atomics.compareExchange(new Int32Array(message.claim), 0, CLAIM_WAITING, CLAIM_BEGUN) === CLAIM_WAITING;
}

/** Starts a run on an engine sized for its heap, unless it was withdrawn. */
async function start(message: RunMessage): Promise<void> {
  // A withdrawn run costs no engine; the claim itself is taken once the engine is ready, right
  // before the run's first slice, so a run stays movable while this thread waits for anything.
  if (Atomics.load(new Int32Array(message.claim), 0) === CLAIM_WITHDRAWN) return;
  const engine = await takeEngine(message.memoryBytes);
  if (!claim(message)) {
    giveBack(engine, false);
    return;
  }
  let run: Run;
  try {
    run = new Run(message, engine);
  } catch (err) {
    const text = messageOf(err);
    post({ type: "done", seq: message.seq, outcome: { kind: "engine", message: text }, console: [], consoleDropped: 0 });
    giveBack(engine, true);
    return;
  }
  runs.set(message.seq, run);
  slice(() => {
    try {
      if (run.stopRequested()) run.finish({ kind: "interrupted" });
      else run.begin();
    } catch (err) {
      run.fault(err);
    }
  });
  settled(run);
}

function handle(message: ToWorker): void {
  if (message.type === "run") {
    start(message).catch((err: unknown) => {
      // Failing to make an engine is reported only for a run this thread can still claim.
      if (Atomics.load(new Int32Array(message.claim), 0) !== CLAIM_BEGUN && !claim(message)) return;
      const text = messageOf(err);
      post({ type: "done", seq: message.seq, outcome: { kind: "engine", message: text }, console: [], consoleDropped: 0 });
    });
    return;
  }
  const run = runs.get(message.seq);
  if (run === undefined || run.ended) return;
  slice(() => {
    try {
      if (message.type === "settle") run.settle(message.settlements);
      else run.finish({ kind: "interrupted" });
    } catch (err) {
      run.fault(err);
    }
  });
  settled(run);
}

if (parentPort !== null && (workerData as Partial<WorkerBoot> | null)?.quickjsUrl !== undefined) {
  // Nothing of this thread may reach the process's stdout or stderr (stdout may be an MCP stream):
  // a program writes to its own console, and whatever a library here would print is dropped.
  for (const stream of [process.stdout, process.stderr]) stream.write = (() => true) as typeof stream.write;
  for (const level of ["log", "info", "warn", "error", "debug", "trace"] as const) console[level] = () => {};
  boot = workerData as WorkerBoot;
  busy = new BigInt64Array(boot.busy);
  quickjs = (await import(boot.quickjsUrl)) as typeof import("quickjs-emscripten");
  ({ transform } = (await import(boot.sucraseUrl)) as { transform: Transform });
  spareHeapBytes = boot.heapBytes;
  refill();
  parentPort.on("message", handle);
  post({ type: "ready" });
}
