import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { SecretSet } from "../../src/log/logger.js";
import { ErrorCode } from "../../src/model/errors.js";
import { callError, neverSent, notReadyError, startError } from "../../src/upstream/upstreamErrors.js";
import type { FailedRequest } from "../../src/upstream/upstreamErrors.js";

const secrets = new SecretSet();
secrets.add("tok-123456789");

function request(fields: Partial<FailedRequest> = {}): FailedRequest {
  return { server: "s", method: "tools/call", timeoutMs: 500, callerSignal: undefined, timedOut: false, connectionClosed: false, secrets, ...fields };
}

describe("mapping a failed forwarded request", () => {
  it("-32001 is a timeout only when abridge's own timer fired; otherwise it is the upstream's answer", () => {
    const sent = new McpError(RpcErrorCode.RequestTimeout, "quota for tok-123456789 exceeded");
    const theirs = callError(sent, request());
    expect(theirs).toMatchObject({ code: "UPSTREAM_ERROR", retryable: false, details: { rpcCode: -32001 } });
    expect(theirs.message).not.toContain("tok-123456789");
    expect(theirs.cause).toBe(sent);
    expect(callError(sent, request({ timedOut: true }))).toMatchObject({
      code: "UPSTREAM_TIMEOUT",
      retryable: true,
      message: "s: tools/call timed out after 500 ms",
    });
  });

  it("-32000 is the server going away only when the connection is gone", () => {
    const closed = new McpError(RpcErrorCode.ConnectionClosed, "Connection closed");
    expect(callError(closed, request({ connectionClosed: true }))).toMatchObject({ code: "UPSTREAM_EXITED", retryable: true });
    expect(callError(closed, request())).toMatchObject({ code: "UPSTREAM_ERROR" });
  });

  it("the caller's abort wins; a malformed result is the upstream's error; a failed send never reached it", () => {
    const aborted = new AbortController();
    aborted.abort();
    expect(callError(new Error("x"), request({ callerSignal: aborted.signal }))).toMatchObject({ code: "CANCELLED" });
    expect(callError(new z.ZodError([]), request())).toMatchObject({ code: "UPSTREAM_ERROR", message: "s: malformed tools/call result" });
    const notSent = callError(new Error("Not connected tok-123456789"), request());
    expect(notSent).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true, message: "s: Not connected ***" });
    expect(neverSent(notSent)).toBe(true);
    expect(neverSent(callError(new McpError(-1, "no"), request()))).toBe(false);
  });
});

describe("start and availability errors", () => {
  it("a failed start carries the last stderr lines, redacted", () => {
    const error = startError(new Error("spawn failed"), "s", ["one", "two", "three", "token tok-123456789"], secrets);
    expect(error).toMatchObject({ code: "UPSTREAM_START_FAILED", retryable: true, message: "s: spawn failed (stderr: two | three | token ***)" });
    const aborted = new AbortController();
    aborted.abort();
    expect(startError(new Error("x"), "s", [], secrets, aborted.signal)).toMatchObject({ code: "CANCELLED" });
  });

  it("says why a server takes no request, retryable only when waiting can help", () => {
    expect(notReadyError("s", "disabled", undefined)).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: false, message: "s is disabled" });
    expect(notReadyError("s", "closed", undefined)).toMatchObject({ retryable: false });
    expect(notReadyError("s", "restarting", undefined)).toMatchObject({ retryable: true, message: "s is restarting; try again shortly" });
    const failed = notReadyError("s", "failed", { code: ErrorCode.UPSTREAM_START_FAILED, message: "boom" });
    expect(failed).toMatchObject({
      retryable: true,
      message: "s failed to start: boom",
      details: { server: "s", state: "failed", error: { message: "boom" } },
    });
  });
});
