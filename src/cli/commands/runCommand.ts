import { readFile } from "node:fs/promises";
import path from "node:path";
import type { RunCodeOptions } from "../../core/bridge.js";
import { messageOf } from "../../model/errors.js";
import { isObject } from "../../model/json.js";
import type { CallToolResult } from "../../model/types.js";
import { ExitCode, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { CACHE_DIR_OPTION, withBridge } from "../openBridge.js";
import { positiveIntOption, usageError } from "../usageError.js";

/** The text of an answer's text blocks (a run's answer has one). */
function answerText(answer: CallToolResult): string {
  const blocks = Array.isArray(answer.content) ? answer.content : [];
  return blocks.map((b) => (isObject(b) && b.type === "text" && typeof b.text === "string" ? b.text : "")).join("\n");
}

/**
 * The program `abridge run` is given: the file named, or `-e`'s text; exactly one of them. An
 * unreadable file is a usage error naming the file, as nothing was run.
 */
async function programOf(file: string | undefined, inline: unknown, cwd: string): Promise<string> {
  if (file !== undefined && typeof inline === "string") throw usageError("give a program file or -e CODE, not both");
  if (typeof inline === "string") return inline;
  if (file === undefined) throw usageError("give a program: a file (abridge run FILE.ts) or -e CODE");
  const where = path.resolve(cwd, file);
  try {
    return await readFile(where, "utf8");
  } catch (err) {
    throw usageError(`cannot read the program file ${where}: ${messageOf(err)}`);
  }
}

/**
 * `abridge run FILE.ts` / `abridge run -e CODE`: runs one program against the config's servers,
 * as code mode's `run_code` does, and prints its answer (console lines, the return value's JSON or
 * the error, a footer). A program that failed exits 1 with its error code on stderr.
 */
export const runCommand: CommandSpec = {
  path: ["run"],
  summary: "Run a program that calls the servers' tools (code mode's run_code) and print its answer (exit 1 when the program fails)",
  args: "[FILE.ts]",
  positionals: { min: 0, max: 1 },
  options: {
    eval: { type: "string", short: "e", value: "CODE", description: "The program's text instead of a file" },
    "timeout-ms": { type: "string", value: "MS", description: "The run's wall-clock limit, calls included (default: [code] timeout_ms)" },
    "memory-mb": { type: "string", value: "MB", description: "The program's heap limit (default: [code] memory_mb)" },
    "max-calls": { type: "string", value: "N", description: "Tool calls the program may make (default: [code] max_calls)" },
    json: { type: "boolean", description: "Print the whole run result as JSON (console, return value, error, calls, duration)" },
    ...CACHE_DIR_OPTION,
  },
  details:
    "The program is the body of an async function: one global per server with a method per tool, tools.call(name, args), console.\n" +
    "Code mode's search_tools (serve --mode code) answers the tools' declarations. Exit 0 when the run succeeded; 1 when the\n" +
    "program failed (CODE_ERROR, CODE_TIMEOUT, CODE_MEMORY, CODE_LIMIT; the code is on stderr); 2 for a bad command line or an\n" +
    "unreadable program file.",
  async run(ctx) {
    const limits: NonNullable<RunCodeOptions["limits"]> = {};
    const timeout = positiveIntOption(ctx.values, "timeout-ms");
    const memory = positiveIntOption(ctx.values, "memory-mb");
    const maxCalls = positiveIntOption(ctx.values, "max-calls");
    if (timeout !== undefined) limits.timeout_ms = timeout;
    if (memory !== undefined) limits.memory_mb = memory;
    if (maxCalls !== undefined) limits.max_calls = maxCalls;
    const code = await programOf(ctx.positionals[0], ctx.values.eval, ctx.io.cwd);
    return withBridge(ctx, async (bridge) => {
      const { result, answer } = await bridge.runCode(code, { limits, signal: ctx.io.signal, client: "cli" });
      writeLine(ctx.io.stdout, ctx.values.json ? JSON.stringify(result, null, 2) : answerText(answer));
      if (result.ok) return ExitCode.OK;
      if (ctx.io.signal.aborted) return ExitCode.INTERRUPTED;
      const error = result.error;
      writeLine(ctx.io.stderr, ctx.secrets.redact(`abridge: the program failed: ${error?.message ?? "no result"} [${error?.code ?? "INTERNAL"}]`));
      return ExitCode.FAILURE;
    });
  },
};
