/**
 * The two sessions of a task and their o200k token counts.
 *
 * Turn model: a session that makes its calls in K model turns has K + 1 turns (the last writes the
 * answer), and every turn reads the tool list. A call costs its name and arguments' JSON (the
 * model writes them), a result the text of its content blocks (the model reads it), the answer
 * its JSON. `tokens` counts each call and result once; `transcriptTokens` counts what a chat model
 * is sent when every turn re-reads the whole conversation before it (list, then every earlier
 * call and result), which weighs large results the more turns follow them.
 */
import { toOpenAiFunctions } from "../../src/catalog/renderTools.js";
import type { ListedTool } from "../../src/catalog/types.js";
import type { JsonObject } from "../../src/model/types.js";
import { countTokens } from "../../src/tokens/countTokens.js";
import { canonical, textOf } from "./seeded.js";
import type { CodeModeTask, ModelCall, TaskContext } from "./types.js";

/** Token counts of one session. */
export interface SessionTokens {
  /** Model turns: turns with calls, plus the one that writes the answer. */
  turns: number;
  calls: number;
  /** The tool list once. */
  listOnce: number;
  /** The list read by every turn. */
  list: number;
  /** Call names and arguments. */
  callText: number;
  /** Results as the model reads them. */
  results: number;
  answer: number;
  /** list + callText + results + answer. */
  tokens: number;
  /** Every turn re-reading the conversation before it, plus what the model wrote. */
  transcriptTokens: number;
}

/** One step of a session as counted: what the model wrote in a turn and what it read back. */
export interface TurnCount {
  written: number;
  read: number;
  calls: number;
}

/** A session's count from the list's tokens, its turns with calls, and the answer's tokens (turn model above). */
export function sessionTokens(listOnce: number, turns: readonly TurnCount[], answer: number): SessionTokens {
  const callText = turns.reduce((s, t) => s + t.written, 0);
  const results = turns.reduce((s, t) => s + t.read, 0);
  const n = turns.length + 1;
  // Turn i (0-based) is sent the list and turns 0..i-1; the last (answer) turn all of them.
  let transcript = 0;
  let before = 0;
  for (let i = 0; i < n; i++) {
    transcript += listOnce + before;
    const t = turns[i];
    if (t !== undefined) before += t.written + t.read;
  }
  return {
    turns: n,
    calls: turns.reduce((s, t) => s + t.calls, 0),
    listOnce,
    list: listOnce * n,
    callText,
    results,
    answer,
    tokens: listOnce * n + callText + results + answer,
    transcriptTokens: transcript + callText + answer,
  };
}

/** o200k tokens of a tool list as a model is sent it (OpenAI function tools). */
export function listTokens(listed: readonly ListedTool[]): number {
  return countTokens(JSON.stringify(toOpenAiFunctions(listed)));
}

const callTokens = (call: ModelCall): number => countTokens(call.tool) + countTokens(JSON.stringify(call.args));

/** The classic session in compact mode: its answer and its count. Any tool error fails the session. */
export async function classicSession(task: CodeModeTask, ctx: TaskContext): Promise<{ answer: unknown; count: SessionTokens }> {
  const listOnce = listTokens(ctx.bridge.list("compact"));
  const turns: TurnCount[] = [];
  const answer = await task.classic(
    {
      turn: async (...calls) => {
        const results = await Promise.all(calls.map((c) => ctx.bridge.callTool(c.tool, c.args, { mode: "compact" })));
        const texts = results.map(textOf);
        results.forEach((r, i) => {
          if (r.isError === true) throw new Error(`${task.name}: classic call ${calls[i]?.tool} failed: ${texts[i]?.slice(0, 300)}`);
        });
        turns.push({ written: calls.reduce((s, c) => s + callTokens(c), 0), read: texts.reduce((s, t) => s + countTokens(t), 0), calls: calls.length });
        return texts;
      },
    },
    ctx,
  );
  return { answer, count: sessionTokens(listOnce, turns, countTokens(JSON.stringify(answer))) };
}

/** True when `declarations` declare `method` inside `namespace server`. */
function declares(declarations: string, use: string): boolean {
  const [server, method] = use.split(".") as [string, string];
  const at = declarations.indexOf(`namespace ${server} `);
  if (at === -1) return false;
  const end = declarations.indexOf("\n}", at);
  return new RegExp(`\\b${method}\\s*[(<]`).test(declarations.slice(at, end === -1 ? undefined : end));
}

/** What the code session did besides its count: the searches made and the run's answer text. */
export interface CodeSessionDetail {
  searches: JsonObject[];
  /** Tool calls the program made. */
  programCalls: number;
  runMs: number;
}

/**
 * The code session: a `search_tools` query (and a search by name for what the query's answer
 * did not declare), then `run_code` with the task's program; the answer is the program's
 * return value. A failed run, or a program calling a function no search declared, fails it.
 */
export async function codeSession(task: CodeModeTask, ctx: TaskContext): Promise<{ answer: unknown; count: SessionTokens; detail: CodeSessionDetail }> {
  const { bridge } = ctx;
  const listOnce = listTokens(bridge.list("code"));
  const turns: TurnCount[] = [];
  const searches: JsonObject[] = [];
  const search = async (args: JsonObject): Promise<string> => {
    const result = await bridge.callTool("search_tools", args, { mode: "code" });
    const text = textOf(result);
    if (result.isError === true) throw new Error(`${task.name}: search_tools ${JSON.stringify(args)} failed: ${text.slice(0, 300)}`);
    searches.push(args);
    turns.push({ written: callTokens({ tool: "search_tools", args }), read: countTokens(text), calls: 1 });
    return text;
  };
  let declared = await search({ query: task.search });
  const missing = task.uses.filter((use) => !declares(declared, use));
  if (missing.length > 0) declared += `\n${await search({ names: missing })}`;
  const still = task.uses.filter((use) => !declares(declared, use));
  if (still.length > 0) throw new Error(`${task.name}: search_tools never declared ${still.join(", ")}:\n${declared.slice(0, 500)}`);

  const code = task.program(ctx);
  // Bridge.runCode is what run_code runs: `answer` is the tool's result, `result` holds the return value.
  const { result, answer } = await bridge.runCode(code);
  const text = textOf(answer);
  if (!result.ok || answer.isError === true || result.returnJson === undefined) throw new Error(`${task.name}: run_code failed: ${text.slice(0, 500)}`);
  turns.push({ written: callTokens({ tool: "run_code", args: { code } }), read: countTokens(text), calls: 1 });
  const value = JSON.parse(result.returnJson) as unknown;
  return {
    answer: value,
    count: sessionTokens(listOnce, turns, countTokens(JSON.stringify(value))),
    detail: { searches, programCalls: result.calls.length, runMs: result.durationMs },
  };
}

/** Throws when two answers differ (as canonical JSON), naming the task and showing both. */
export function sameAnswer(task: string, what: string, a: unknown, b: unknown): void {
  if (canonical(a) !== canonical(b)) throw new Error(`${task}: ${what} differ:\n  ${canonical(a).slice(0, 400)}\n  ${canonical(b).slice(0, 400)}`);
}
