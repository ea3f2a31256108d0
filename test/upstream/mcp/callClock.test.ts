/**
 * The clock of one forwarded request: its timeout gives up with the clock's own McpError (told
 * apart from an upstream's -32001 by identity), a total bound ends a call whose idle timer keeps
 * being restarted, the caller's abort gives up with the caller's reason, a request through the SDK
 * gets a signal aborted with the same reason even when it asks late, and stop() leaves no listener.
 */
import { getEventListeners } from "node:events";
import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { CallClock } from "../../../src/upstream/mcp/callClock.js";
import { settled } from "../../helpers/waitFor.js";

/** The first reason the clock cancels a direct request with. */
function cancelled(clock: CallClock): Promise<unknown> {
  return new Promise((resolve) => {
    clock.cancelDirect = resolve;
  });
}

describe("CallClock", () => {
  it("gives up with its own timeout error, the one the caller tells apart by identity", async () => {
    const clock = new CallClock(5, undefined);
    const reason = await settled(cancelled(clock), { what: "the timeout" });
    expect(reason).toBeInstanceOf(McpError);
    expect(reason).toBe(clock.timedOut);
    expect(clock.timedOut).toMatchObject({ code: RpcErrorCode.RequestTimeout, message: expect.stringContaining("no answer within 5 ms") });
    expect(clock.signal().aborted).toBe(true);
    expect(clock.signal().reason).toBe(clock.timedOut);
    clock.stop();
  });

  it("ends at its total bound however often the idle timer is restarted", async () => {
    const clock = new CallClock(60_000, undefined, 5);
    const restarts = setInterval(() => clock.arm(), 1);
    try {
      const reason = await settled(cancelled(clock), { what: "the total bound" });
      expect(reason).toBe(clock.timedOut);
    } finally {
      clearInterval(restarts);
      clock.stop();
    }
  });

  it("gives up with the caller's reason on its abort, and stop() removes its listener", async () => {
    const caller = new AbortController();
    const clock = new CallClock(60_000, caller.signal);
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(1);
    const sdkSignal = clock.signal();
    const reason = cancelled(clock);
    caller.abort("client went away");
    expect(await reason).toBe("client went away");
    expect(sdkSignal.aborted).toBe(true);
    expect(sdkSignal.reason).toBe("client went away");
    expect(clock.timedOut).toBeUndefined();
    clock.stop();

    const other = new AbortController();
    const stopped = new CallClock(60_000, other.signal);
    stopped.stop();
    expect(getEventListeners(other.signal, "abort")).toHaveLength(0);
  });
});
