/**
 * The shape of one task of the code-mode benchmark: data it writes, the classic session a good
 * agent would run in compact mode, and the program the same agent would send in code mode.
 */
import type { Bridge } from "../../src/core/bridge.js";
import type { CallToolResult, JsonObject } from "../../src/model/types.js";

/** One tool call a model makes: the exposed name in compact mode and its arguments. */
export interface ModelCall {
  tool: string;
  args: JsonObject;
}

/**
 * A classic session as the model runs it: each `turn` is one model turn, the calls it makes in it
 * (in parallel when there are several), answered with the text of each result as the model reads
 * it. The session's answer is what the task's `classic` function returns after its last turn.
 */
export interface ClassicSession {
  turn(...calls: ModelCall[]): Promise<string[]>;
}

/** What a task sees: its own data folder and the bridge, for set-up and checks that are not counted. */
export interface TaskContext {
  /** The folder the filesystem server may read and write; the task's files live under it. */
  dir: string;
  bridge: Bridge;
  /** A direct call in compact mode that no session counts (set-up, checks, clean-up); throws on a tool error. */
  call(tool: string, args: JsonObject): Promise<CallToolResult>;
}

/** One multi-step task with a small answer and large intermediate results. */
export interface CodeModeTask {
  name: string;
  /** The request, in a sentence, as a user would make it. */
  prompt: string;
  /** Writes the task's data under `ctx.dir` from `seed` and returns the answer that data implies. */
  generate(ctx: TaskContext, seed: number): Promise<unknown>;
  /** Brings the servers' state to the task's start (a memory graph to query); run before each session, not counted. */
  prepare?(ctx: TaskContext): Promise<void>;
  /** The fewest turns and calls a good agent makes in compact mode; returns the answer it reads off the results. */
  classic(session: ClassicSession, ctx: TaskContext): Promise<unknown>;
  /** What the agent asks `search_tools` first in code mode. */
  search: string;
  /** The functions the program calls, `server.method`: the declarations the session must have read. */
  uses: readonly string[];
  /** The program sent to `run_code`: its return value is the answer. */
  program(ctx: TaskContext): string;
  /** Checks what a session left behind (a file written, entities recorded) against the data; throws when it is wrong. */
  check?(ctx: TaskContext): Promise<void>;
}
