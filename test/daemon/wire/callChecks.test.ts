import { describe, expect, it } from "vitest";
import { isWellFormedCall, isWellFormedResultAnswer } from "../../../src/daemon/wire/callChecks.js";
import { answerBodySchemas, daemonRequestSchema, describeIssues, parseAnswer, parseRequest, readAnswerEnvelope, requestIdOf, requestIdSchema } from "../../../src/daemon/wire/protocol.js";

const token = "t0k";
const call = { op: "call_tool", token, server: "echo", tool: "echo" };

/** Call requests the hand check must judge exactly as the schema does (parsed from JSON, as the daemon sees them). */
const requests: unknown[] = [
  call,
  { ...call, id: 7, args: { text: "x", nested: { a: [1, 2] } }, timeout_ms: 5_000, mode: "full" },
  { ...call, id: "a".repeat(200) },
  { ...call, id: "a".repeat(201) },
  { ...call, id: null },
  { ...call, id: true },
  { ...call, id: 1.5 },
  { ...call, args: [1] },
  { ...call, args: null },
  { ...call, args: "x" },
  { ...call, arguments: { text: "x" } },
  { ...call, server: "" },
  { ...call, tool: "t".repeat(1000) },
  { ...call, tool: "t".repeat(1001) },
  { ...call, server: 5 },
  { ...call, token: 5 },
  { op: "call_tool", server: "echo", tool: "echo" },
  { ...call, timeout_ms: 0 },
  { ...call, timeout_ms: 1.5 },
  { ...call, timeout_ms: -3 },
  { ...call, timeout_ms: 24 * 3_600_000 },
  { ...call, timeout_ms: 24 * 3_600_000 + 1 },
  { ...call, timeout_ms: "100" },
  { ...call, mode: "auto" },
  { ...call, mode: "tiny" },
  JSON.parse(`{"op":"call_tool","token":"t0k","server":"s","tool":"t","__proto__":{"x":1}}`),
  JSON.parse(`{"op":"call_tool","token":"t0k","server":"s","tool":"t","args":{"__proto__":{"x":1}}}`),
  { op: "list_tools", token },
  { op: "stats", token, id: 3 },
  { op: "nope", token },
  [call],
  null,
  42,
];

describe("hand-written checks of the call messages", () => {
  it("judge every call request as the protocol's schema does, with the schema's messages on rejection", () => {
    for (const value of requests) {
      const fromSchema = daemonRequestSchema.safeParse(value);
      const parsed = parseRequest(value);
      expect(parsed.success, JSON.stringify(value)).toBe(fromSchema.success);
      if (!parsed.success && !fromSchema.success) {
        expect(describeIssues(parsed.error, "request")).toBe(describeIssues(fromSchema.error, "request"));
      }
      // What the hand check takes, the schema takes too (never the other way round).
      if (isWellFormedCall(value)) expect(fromSchema.success, JSON.stringify(value)).toBe(true);
    }
    // The hand check is the one that takes well-formed calls: the request comes back as parsed.
    const value = { ...call, args: { text: "x" } };
    const parsed = parseRequest(value);
    expect(parsed.success && parsed.data).toBe(value);
  });

  it("reads request ids as the schema does", () => {
    for (const id of [1, "x", null, undefined, "a".repeat(201), Number.NaN, {}, [1], true]) {
      const fromSchema = requestIdSchema.optional().safeParse(id);
      expect(requestIdOf({ id })).toEqual(fromSchema.success ? fromSchema.data : undefined);
    }
    expect(requestIdOf([1])).toBeUndefined();
  });

  it("accepts call answers the schema accepts, and sends the rest to the schema's error", () => {
    const answers: unknown[] = [
      { id: 1, ok: true, result: { content: [{ type: "text", text: "x" }] } },
      { ok: true, result: {} },
      { id: "a", ok: true, result: { content: [], isError: true, structuredContent: { a: 1 } } },
      { id: 1, ok: true, result: { content: "x" } },
      { id: 1, ok: true, result: { isError: 1 } },
      { id: 1, ok: true, result: null },
      { id: 1, ok: true, result: [1] },
      { id: 1, ok: true },
      { id: {}, ok: true, result: {} },
      { id: 1, ok: false, error: { code: "X", message: "m", retryable: false } },
      { id: 1, ok: false, error: { code: "X", retryable: false } },
    ];
    const schema = answerBodySchemas.call_tool;
    for (const value of answers) {
      let handOrSchema: boolean;
      try {
        parseAnswer("call_tool", value);
        handOrSchema = true;
      } catch (err) {
        handOrSchema = false;
        expect((err as { code: string }).code).toBe("DAEMON_BAD_RESPONSE");
        expect((err as Error).message).toContain("call_tool");
      }
      const record = value as Record<string, unknown>;
      const expected =
        record.ok === true
          ? schema.safeParse(value).success && requestIdSchema.optional().safeParse(record.id).success
          : record.ok === false && typeof (record.error as Record<string, unknown>).message === "string";
      expect(handOrSchema, JSON.stringify(value)).toBe(expected);
      if (isWellFormedResultAnswer(value)) expect(parseAnswer("call_tool", value)).toBe(value);
    }
  });

  it("reads an answer's envelope by hand and rejects one without ok or with a bad id", () => {
    expect(readAnswerEnvelope({ id: 3, ok: true, result: {} })).toEqual({ id: 3, ok: true });
    expect(readAnswerEnvelope({ ok: false })).toEqual({ id: undefined, ok: false });
    expect(() => readAnswerEnvelope({ id: 3 })).toThrow();
    expect(() => readAnswerEnvelope({ id: { a: 1 }, ok: true })).toThrow();
    expect(() => readAnswerEnvelope("x")).toThrow();
  });
});
