/**
 * The hand-written checks of the daemon's protocol (src/daemon/wire/protocol/) against the zod
 * schemas they stand in for: the `call_tool` request, a request's `id`, a call's answer and an
 * answer's envelope. Each pair must agree on the samples and on their generated variants (see
 * test/helpers/checkAgreement.ts), and the parse functions built on them must give the schema's
 * verdict and the schema's messages.
 */
import { describe, expect, it } from "vitest";
import {
  answerEnvelopeSchema,
  daemonRequestSchema,
  describeIssues,
  envelopeByHand,
  isRequestIdOrAbsent,
  isWellFormedCall,
  isWellFormedResultAnswer,
  okAnswerSchemas,
  parseAnswer,
  parseRequest,
  readAnswerEnvelope,
  requestIdOf,
  requestIdSchema,
} from "../../../src/daemon/wire/protocol.js";
import { checkAgreement, variantsOf, type CheckPair } from "../../helpers/checkAgreement.js";

const token = "t0k";
const call = { op: "call_tool", token, server: "echo", tool: "echo" };

const validCalls: unknown[] = [
  call,
  { ...call, id: 7, args: { text: "x", nested: { a: [1, 2] } }, timeout_ms: 5_000, mode: "full" },
  { ...call, id: "a".repeat(200) },
  { ...call, id: null },
  { ...call, id: 1.5 },
  { ...call, tool: "t".repeat(1000) },
  { ...call, timeout_ms: 24 * 3_600_000 },
  { ...call, mode: "auto" },
  JSON.parse(`{"op":"call_tool","token":"t0k","server":"s","tool":"t","args":{"__proto__":{"x":1}}}`),
];

const invalidCalls: unknown[] = [
  { ...call, id: "a".repeat(201) },
  { ...call, id: true },
  { ...call, args: [1] },
  { ...call, args: null },
  { ...call, args: "x" },
  { ...call, arguments: { text: "x" } },
  { ...call, server: "" },
  { ...call, tool: "t".repeat(1001) },
  { ...call, server: 5 },
  { ...call, token: 5 },
  { op: "call_tool", server: "echo", tool: "echo" },
  { ...call, timeout_ms: 0 },
  { ...call, timeout_ms: 1.5 },
  { ...call, timeout_ms: -3 },
  { ...call, timeout_ms: 24 * 3_600_000 + 1 },
  { ...call, timeout_ms: "100" },
  { ...call, mode: "tiny" },
  JSON.parse(`{"op":"call_tool","token":"t0k","server":"s","tool":"t","__proto__":{"x":1}}`),
  { op: "nope", token },
  [call],
  null,
  42,
];

/** Requests of the other ops: the schema's alone. */
const otherOps: unknown[] = [
  { op: "list_tools", token },
  { op: "stats", token, id: 3 },
];

/**
 * The `call_tool` request: any other op is the schema's to judge. Outputs are not compared: the
 * schema's `z.record` drops an own `__proto__` key of `args`, which the hand check passes on as
 * the line had it.
 */
const callPair: CheckPair = {
  name: "call_tool request",
  schema: daemonRequestSchema,
  fast: isWellFormedCall,
  defers: (value) => typeof value !== "object" || value === null || (value as Record<string, unknown>).op !== "call_tool",
};

const answers = {
  valid: [
    { id: 1, ok: true, result: { content: [{ type: "text", text: "x" }] } },
    { ok: true, result: {} },
    { id: "a", ok: true, result: { content: [], isError: true, structuredContent: { a: 1 } } },
    { id: null, ok: true, result: { content: [] }, extra: 1 },
  ],
  invalid: [
    { id: 1, ok: true, result: { content: "x" } },
    { id: 1, ok: true, result: { isError: 1 } },
    { id: 1, ok: true, result: null },
    { id: 1, ok: true, result: [1] },
    { id: 1, ok: true },
    { id: {}, ok: true, result: {} },
    { id: 1, ok: false, error: { code: "X", message: "m", retryable: false } },
  ],
};

describe("hand-written checks of the daemon protocol", () => {
  it("the call_tool check agrees with the request schema", () => {
    const tally = checkAgreement(callPair, { valid: [...validCalls, ...otherOps], invalid: invalidCalls });
    expect(tally.deferred).toBeGreaterThan(0);
  });

  it("parseRequest gives the schema's verdict and messages, and takes a well-formed call as it is", () => {
    for (const value of [...validCalls, ...invalidCalls, ...otherOps].flatMap((sample) => [sample, ...variantsOf(sample)])) {
      const fromSchema = daemonRequestSchema.safeParse(value);
      const parsed = parseRequest(value);
      expect(parsed.success, JSON.stringify(value)).toBe(fromSchema.success);
      if (!parsed.success && !fromSchema.success) expect(describeIssues(parsed.error, "request")).toBe(describeIssues(fromSchema.error, "request"));
    }
    const value = { ...call, args: { text: "x" } };
    const parsed = parseRequest(value);
    expect(parsed.success && parsed.data).toBe(value);
  });

  it("the id check agrees with the id schema, and requestIdOf reads ids by it", () => {
    const ids = { valid: [1, -0.5, "x", "a".repeat(200), null], invalid: ["a".repeat(201), true, {}, [1]] };
    checkAgreement({ name: "request id", schema: requestIdSchema.optional(), fast: isRequestIdOrAbsent, sameOutput: true }, ids);
    for (const id of [...ids.valid, ...ids.invalid, undefined, Number.NaN, Number.POSITIVE_INFINITY]) {
      const fromSchema = requestIdSchema.optional().safeParse(id);
      expect(requestIdOf({ id })).toEqual(fromSchema.success ? fromSchema.data : undefined);
    }
    expect(requestIdOf([1])).toBeUndefined();
  });

  it("the call answer check agrees with the call_tool answer schema", () => {
    // The schema drops unknown top-level members; the hand check passes them on, so outputs differ there.
    checkAgreement({ name: "call_tool answer", schema: okAnswerSchemas.call_tool, fast: isWellFormedResultAnswer }, answers);
    checkAgreement({ name: "read_output answer", schema: okAnswerSchemas.read_output, fast: isWellFormedResultAnswer }, answers);
  });

  it("parseAnswer takes a well-formed call answer as it is and sends the rest to the schema's error", () => {
    for (const value of [...answers.valid, ...answers.invalid, { id: 1, ok: false, error: { code: "X", retryable: false } }]) {
      let accepted: boolean;
      try {
        parseAnswer("call_tool", value);
        accepted = true;
      } catch (err) {
        accepted = false;
        expect((err as { code: string }).code).toBe("DAEMON_BAD_RESPONSE");
        expect(err instanceof Error && err.message).toContain("call_tool");
      }
      const record = value as Record<string, unknown>;
      const expected =
        record.ok === true ? okAnswerSchemas.call_tool.safeParse(value).success : typeof (record.error as Record<string, unknown>).message === "string";
      expect(accepted, JSON.stringify(value)).toBe(expected);
      if (isWellFormedResultAnswer(value)) expect(parseAnswer("call_tool", value)).toBe(value);
    }
  });

  it("the envelope check agrees with the envelope schema, and readAnswerEnvelope throws the schema's error", () => {
    checkAgreement(
      { name: "answer envelope", schema: answerEnvelopeSchema, fast: (value) => envelopeByHand(value) !== undefined },
      { valid: [{ id: 3, ok: true, result: {} }, { ok: false }, { id: null, ok: true }], invalid: [{ id: 3 }, { id: { a: 1 }, ok: true }, { ok: "yes" }, "x"] },
    );
    expect(readAnswerEnvelope({ id: 3, ok: true, result: {} })).toEqual({ id: 3, ok: true });
    expect(readAnswerEnvelope({ ok: false })).toEqual({ id: undefined, ok: false });
    expect(() => readAnswerEnvelope({ id: 3 })).toThrow();
    expect(() => readAnswerEnvelope({ id: { a: 1 }, ok: true })).toThrow();
    expect(() => readAnswerEnvelope("x")).toThrow();
  });
});
