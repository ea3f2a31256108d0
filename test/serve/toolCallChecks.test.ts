/**
 * The hand checks of the stdio fast path of tools/call (src/serve/toolCallChecks.ts) against the
 * SDK schemas they stand in for: a request the fast path takes is one the SDK would take, and a
 * result it passes unparsed is one the SDK's `CallToolResult` schema returns unchanged. The shapes
 * the fast path leaves to the SDK are named below; any other disagreement fails (see
 * test/helpers/checkAgreement.ts). End to end, test/serve/fastToolCalls.test.ts compares the two
 * paths' answers.
 */
import { RELATED_TASK_META_KEY } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { isObject } from "../../src/model/json.js";
import { CallToolResultSchema, isPlainTextResult, plainToolCall, SDK_TOOL_CALL_SCHEMAS } from "../../src/serve/toolCallChecks.js";
import { checkAgreement, type CheckPair, type SchemaLike } from "../helpers/checkAgreement.js";

/** The SDK's checks in its order: the transport's JSON-RPC request schema, then the handler's. */
const sdkToolCall: SchemaLike = {
  safeParse(value) {
    for (const schema of SDK_TOOL_CALL_SCHEMAS) {
      const parsed = schema.safeParse(value);
      if (!parsed.success) return { success: false };
    }
    return { success: true, data: value };
  },
};

const keysOf = (value: unknown): string[] => (isObject(value) ? Object.keys(value) : []);

/** Requests the SDK serves that the fast path leaves to it: other params or `_meta` keys. */
function sdkOnlyRequest(value: unknown): boolean {
  const params = isObject(value) ? value.params : undefined;
  if (keysOf(params).some((key) => !["name", "arguments", "_meta"].includes(key))) return true;
  return keysOf(isObject(params) ? params._meta : undefined).some((key) => key !== "progressToken");
}

const requestPair: CheckPair = { name: "tools/call request", schema: sdkToolCall, fast: (value) => plainToolCall(value) !== undefined, defers: sdkOnlyRequest };

const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { text: "x", nested: { a: [1] } } } };

/** Results the SDK's schema takes that are not the plain text form (it may rewrite them). */
function notPlainText(value: unknown): boolean {
  if (!isObject(value)) return false;
  if (keysOf(value).some((key) => !["content", "isError", "_meta"].includes(key))) return true;
  if (!Array.isArray(value.content)) return true;
  if (value.content.some((block) => !isObject(block) || block.type !== "text" || keysOf(block).some((key) => key !== "type" && key !== "text"))) return true;
  return keysOf(value._meta).some((key) => key === "progressToken" || key === RELATED_TASK_META_KEY || key === "__proto__");
}

const resultPair: CheckPair = {
  name: "tools/call result",
  schema: CallToolResultSchema,
  fast: (value) => isObject(value) && isPlainTextResult(value),
  defers: notPlainText,
  // The plain form is sent as the tool made it, in place of the schema's output.
  sameOutput: true,
};

describe("hand checks of the tools/call fast path", () => {
  it("the request check agrees with the SDK's request schemas", () => {
    const tally = checkAgreement(requestPair, {
      valid: [
        call,
        { ...call, id: "a" },
        { ...call, params: { name: "" } },
        { ...call, params: { name: "echo", _meta: { progressToken: "p" } } },
        { ...call, params: { name: "echo", _meta: { progressToken: 7 } } },
        { ...call, params: { name: "echo", _meta: {} } },
        { ...call, params: { name: "echo", task: { ttl: 1000 } } },
        { ...call, params: { name: "echo", _meta: { progressToken: 1, other: true } } },
      ],
      invalid: [
        { ...call, id: 1.5 },
        { ...call, id: 2 ** 53 },
        { ...call, id: null },
        { ...call, jsonrpc: "1.0" },
        { ...call, method: "tools/list" },
        { ...call, extra: 1 },
        { ...call, params: { arguments: {} } },
        { ...call, params: { name: 5 } },
        { ...call, params: { name: "echo", arguments: [1] } },
        { ...call, params: { name: "echo", _meta: { progressToken: 1.5 } } },
        { ...call, params: { name: "echo", _meta: { progressToken: 2 ** 53 } } },
        { ...call, params: { name: "echo", _meta: { progressToken: null } } },
        { jsonrpc: "2.0", method: "tools/call", params: { name: "echo" } },
      ],
      depth: 3,
    });
    expect(tally.deferred).toBeGreaterThan(0);
  });

  it("the plain result check agrees with the SDK's result schema and passes only what it returns unchanged", () => {
    const text = { type: "text", text: "hello" };
    const tally = checkAgreement(resultPair, {
      valid: [
        { content: [text] },
        { content: [], isError: true },
        { content: [text, { type: "text", text: "" }], _meta: { trace: "t" } },
        { content: [{ ...text, annotations: { priority: 1 } }] },
        { content: [{ type: "image", data: "aGk=", mimeType: "image/png" }] },
        { content: [text], structuredContent: { a: 1 } },
        { isError: false },
        { content: [text], _meta: { progressToken: "p" } },
      ],
      invalid: [
        { content: [text], isError: "yes" },
        { content: [{ type: "text", text: 5 }] },
        { content: [{ type: "text" }] },
        { content: "hello" },
        { content: [text], _meta: [] },
        { content: [text], structuredContent: [1] },
      ],
      depth: 3,
    });
    expect(tally.deferred).toBeGreaterThan(0);
  });
});
