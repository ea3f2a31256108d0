/** Messages between the pool (main thread) and a program worker. Only types. */
import type { ProgramPosition } from "./transpile.js";

/**
 * A compiled WebAssembly.Module, opaque here: the compiler's lib settings declare no WebAssembly
 * types, and nothing but the engine's loader reads it.
 */
export type CompiledWasm = object;

/** What a worker is started with (`workerData`). */
export interface WorkerBoot {
  /** URL of quickjs-emscripten's entry, resolved by the main thread (the worker may run from a data: URL). */
  quickjsUrl: string;
  /** URL of sucrase's entry, the same way. */
  sucraseUrl: string;
  /** The engine's WebAssembly.Module, compiled once by the main thread and shared by every worker. */
  wasmModule: CompiledWasm;
  /** {@link PRELUDE_SOURCE}. */
  prelude: string;
  /** One BigInt64: when the slice of execution running now began (epoch ms), 0 between slices. */
  busy: SharedArrayBuffer;
  /** Engine instances a worker keeps ready for the next runs. */
  spareEngines: number;
  /** Past this many bytes of WebAssembly memory after a run, its engine instance is let go, not kept. */
  recycleBytes: number;
  /** The heap size spare engines are first made for. */
  heapBytes: number;
}

/** A console line of a program. */
export interface ConsoleLine {
  level: "log" | "info" | "warn" | "error";
  text: string;
}

/** Main -> worker: start a run. */
export interface RunMessage {
  type: "run";
  seq: number;
  /** The program as written (the worker strips its types). */
  code: string;
  /** JSON of `{ servers: [{ identifier, tools: [{ method, exposed }] }] }`. */
  spec: string;
  /** Epoch milliseconds (Date.now()) at which the engine interrupts the program. */
  deadline: number;
  /** One Int32, 0 until the run must stop at once (read by the engine's interrupt handler). */
  stop: SharedArrayBuffer;
  /**
   * One Int32 deciding who has this message's run, changed only by compare-and-exchange: 0 while
   * the thread has not begun it, 1 once the worker began it (it stays on this thread), -1 once the
   * main thread withdrew it (the worker drops the message when it gets to it; the run goes on
   * elsewhere). Shared memory, because the thread this matters for is held by a program that
   * computes and reads no message: both sides decide at once, and exactly one of them wins.
   */
  claim: SharedArrayBuffer;
  memoryBytes: number;
  maxValueBytes: number;
  maxConsoleBytes: number;
}

/** The answer to one tool call: the value's JSON, or a failure with a code. */
export type Settlement = { id: number; ok: true; json: string } | { id: number; ok: false; code: string; message: string };

/** Main -> worker: answers to calls of a run. */
export interface SettleMessage {
  type: "settle";
  seq: number;
  settlements: Settlement[];
}

/** Main -> worker: end a run that waits on calls (a running one is stopped through its `stop` word). */
export interface StopMessage {
  type: "stop";
  seq: number;
}

export type ToWorker = RunMessage | SettleMessage | StopMessage;

/** A tool call a program made: the exposed name and the arguments' JSON. */
export interface CallRequest {
  id: number;
  tool: string;
  args: string;
}

/** How a run ended, as the worker saw it. */
export type WorkerOutcome =
  | { kind: "none" }
  | { kind: "value"; json: string }
  /** The return value could not be made JSON (a cycle, a BigInt, a getter that threw). */
  | { kind: "unserializable"; name: string; message: string }
  /** The program threw (or its promise rejected) with an Error, at `position` in the program when its stack names one. */
  | { kind: "thrown"; error: true; name: string; message: string; position?: ProgramPosition; code?: string; tool?: string }
  /** The program threw something that is not an Error (`throw 42`): `text` shows it. */
  | { kind: "thrown"; error: false; text: string }
  /** The engine stopped the program: its deadline passed or the run was stopped. */
  | { kind: "interrupted" }
  /** The program's heap passed its limit. */
  | { kind: "memory" }
  /** The program's stack passed its limit (recursion or nesting too deep, running or parsing). */
  | { kind: "stack" }
  /** The returned JSON is larger than a value may be. */
  | { kind: "too-large"; bytes: number }
  /** The program waits on a promise nothing can settle: no call of it is in flight. */
  | { kind: "stuck" }
  /** The transpiler found a syntax error (`message` starts with "SyntaxError: "). */
  | { kind: "syntax"; message: string; position?: ProgramPosition }
  /** A fault of the engine itself. */
  | { kind: "engine"; message: string };

/** Worker -> main. */
export type FromWorker =
  | { type: "ready" }
  | { type: "calls"; seq: number; calls: CallRequest[] }
  | { type: "done"; seq: number; outcome: WorkerOutcome; console: ConsoleLine[]; consoleDropped: number };
