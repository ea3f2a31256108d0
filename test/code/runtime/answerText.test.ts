import { describe, expect, it } from "vitest";
import { codeAnswerBody, codeAnswerFooter, codeAnswerText } from "../../../src/code/runtime/answerText.js";
import type { CodeRunResult } from "../../../src/code/runtime/codeRuntime.js";

function result(extra: Partial<CodeRunResult>): CodeRunResult {
  return { runId: "r", ok: true, console: [], consoleDropped: 0, calls: [], durationMs: 12.4, ...extra };
}

describe("the answer text", () => {
  it("shows the console in order, then the return value, then the calls and time", () => {
    const text = codeAnswerText(
      result({
        console: [
          { level: "log", text: "one" },
          { level: "warn", text: "two" },
          { level: "error", text: "three" },
          { level: "info", text: "four" },
        ],
        returnJson: '{"n":3}',
        calls: [{ tool: "a_b", ok: true, ms: 1 }],
      }),
    );
    expect(text).toBe('[log] one\n[warn] two\n[error] three\n[info] four\n{"n":3}\n(1 call, 12 ms)');
  });

  it("shows the error with its code in place of a value", () => {
    const text = codeAnswerText(
      result({ ok: false, error: { code: "CODE_ERROR", message: "TypeError: x is not a function (line 2, column 3)" }, consoleDropped: 2 }),
    );
    expect(text).toBe("error: TypeError: x is not a function (line 2, column 3) [CODE_ERROR]\n(0 calls, 12 ms, 2 console lines dropped)");
    expect(codeAnswerText(result({}))).toBe("(0 calls, 12 ms)");
  });

  it("is the body and the footer: the footer alone when there is no output", () => {
    const full = result({
      console: [{ level: "log", text: "x".repeat(500) }],
      returnJson: '"done"',
      calls: [
        { tool: "t", ok: true, ms: 1 },
        { tool: "t", ok: false, code: "TOOL_REFUSED", ms: 1 },
      ],
    });
    expect(codeAnswerText(full)).toBe(`${codeAnswerBody(full)}\n${codeAnswerFooter(full)}`);
    expect(codeAnswerFooter(full)).toBe("(2 calls, 12 ms)");
    expect(codeAnswerBody(result({}))).toBe("");
  });
});
