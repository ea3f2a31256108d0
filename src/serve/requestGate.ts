/**
 * The count of the requests an MCP front end is answering, apart from either front end because
 * both use it: stopping lets what is under way finish, and refuses what comes after.
 */
import { ErrorCode as RpcCode, McpError } from "@modelcontextprotocol/sdk/types.js";

/**
 * Counts the requests a front end is answering, so that stopping can let them finish: a client
 * whose call was under way when abridge got SIGTERM gets its answer, not a dropped connection.
 */
export class RequestGate {
  private active = 0;
  private draining = false;
  private readonly idle = new Set<() => void>();

  /** Admits a request, or refuses it once draining has begun. */
  enter(method: string): void {
    if (this.draining) throw new McpError(RpcCode.InternalError, `abridge is shutting down: ${method} was not started; try again`);
    this.active += 1;
  }

  leave(): void {
    // The SDK hands the answer to the transport a few promise turns after the handler returns;
    // counting the request done on the next macrotask lets that send happen before a close.
    setImmediate(() => {
      this.active -= 1;
      if (this.active === 0) for (const resolve of this.idle) resolve();
    });
  }

  drain(graceMs: number): Promise<void> {
    this.draining = true;
    if (this.active === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.idle.delete(done);
        resolve();
      };
      // Not unref'd: the answer still to come is all that keeps the process alive meanwhile.
      const timer = setTimeout(done, graceMs);
      this.idle.add(done);
    });
  }
}
