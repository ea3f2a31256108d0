/** A host for program runs in tests: real tool handlers, every call recorded as the runtime made it. */
import type { CodeHost } from "../../../src/code/runtime/codeRuntime.js";
import type { CodeServerName } from "../../../src/code/runtime/globalNames.js";

/** A call the host received. */
export interface HostCall {
  exposed: string;
  args: Record<string, unknown>;
  signal: AbortSignal;
  runId: string;
  /** performance.now() when it came in. */
  at: number;
}

export type ToolHandler = (args: Record<string, unknown>, call: HostCall) => unknown;

/**
 * A host with the servers given; each tool's exposed name is `<server>_<tool>`. `handlers` answer
 * by exposed name; a name without one is refused as the bridge refuses an unknown tool.
 */
export function codeHost(servers: Record<string, string[]>, handlers: Record<string, ToolHandler>): CodeHost & { calls: HostCall[] } {
  const calls: HostCall[] = [];
  const list: CodeServerName[] = Object.entries(servers).map(([name, tools]) => ({
    name,
    tools: tools.map((tool) => ({ name: tool, exposed: `${name}_${tool}` })),
  }));
  return {
    servers: list,
    calls,
    async callTool(exposed, args, context) {
      const call: HostCall = { exposed, args, signal: context.signal, runId: context.runId, at: performance.now() };
      calls.push(call);
      const handler = handlers[exposed];
      if (handler === undefined) throw Object.assign(new Error(`no tool named "${exposed}"`), { code: "TOOL_NOT_FOUND" });
      return await handler(args, call);
    },
  };
}

/** A promise with its resolve function, for a test to wait on an event. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Resolves when `signal` aborts, with its reason. */
export function aborted(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener("abort", () => resolve(signal.reason), { once: true });
  });
}
