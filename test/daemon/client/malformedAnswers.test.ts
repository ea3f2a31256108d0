/**
 * A client facing a daemon that does not speak the protocol: a real TCP server on 127.0.0.1 stands
 * in for the daemon (named by a real lockfile) and answers each request with a line the test
 * chooses. Every malformed answer must be a DAEMON_BAD_RESPONSE naming what was wrong, never data
 * of the wrong shape handed to the host.
 */
import { createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DaemonClient } from "../../../src/daemon/client/daemonClient.js";
import { pingDaemon } from "../../../src/daemon/client/ensureDaemon.js";
import { daemonProof, newNonce } from "../../../src/daemon/wire/daemonProof.js";
import { acquireLock, lockFilePath, newToken, type LockInfo } from "../../../src/daemon/wire/lockfile.js";
import { tempDir } from "../../helpers/cliHarness.js";
import { rejection } from "../../helpers/rejection.js";

type Answerer = (request: Record<string, unknown>) => string;

const cleanups: (() => Promise<void>)[] = [];
const clients: DaemonClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A fake daemon: listens on 127.0.0.1, proves that it holds the token it writes into a fresh state
 * dir's lockfile (the `hello` every connection starts with), and answers every other request line
 * with `answer(request)` (the raw line, newline added).
 */
async function fakeDaemon(answer: Answerer): Promise<{ stateDir: string; lock: LockInfo; requests: Record<string, unknown>[] }> {
  const requests: Record<string, unknown>[] = [];
  const token = newToken();
  let address = "";
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    let buffered = "";
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
        const request = JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>;
        buffered = buffered.slice(newline + 1);
        if (request.op === "hello") {
          const nonce = newNonce();
          socket.write(`${JSON.stringify({ id: request.id, ok: true, nonce, proof: daemonProof(token, String(request.nonce), nonce, address) })}\n`);
          continue;
        }
        requests.push(request);
        socket.write(`${answer(request)}\n`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const { dir, cleanup } = await tempDir("abridge-fake-daemon-");
  cleanups.push(cleanup);
  const now = new Date().toISOString();
  address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const lock: LockInfo = {
    pid: process.pid,
    address,
    token,
    started: now,
    version: "0.0.0",
    heartbeat: now,
    heartbeatMs: 60_000,
  };
  expect(await acquireLock(lockFilePath(dir), lock)).toEqual({ acquired: true });
  return { stateDir: dir, lock, requests };
}

function client(stateDir: string): DaemonClient {
  const made = new DaemonClient({ stateDir, requestTimeoutMs: 30_000, connectTimeoutMs: 10_000 });
  clients.push(made);
  return made;
}

/** The answer line for `request` with `fields` after the echoed id. */
function line(request: Record<string, unknown>, fields: Record<string, unknown>): string {
  return JSON.stringify({ id: request.id, ...fields });
}

describe("a client reading a daemon's malformed answers", () => {
  it("rejects a tool list whose tools have the wrong shape, naming the op and the field", async () => {
    const fake = await fakeDaemon((request) => line(request, { ok: true, tools: [{ server: "s", name: 5, uri: "mcp://s/t" }] }));
    const error = await rejection(client(fake.stateDir).listTools());
    expect(error.code).toBe("DAEMON_BAD_RESPONSE");
    expect(error.message).toContain("list_tools");
    expect(error.message).toContain("tools.0.name");
    // The request itself was well formed: token first, the op, the client's id.
    expect(fake.requests[0]).toMatchObject({ token: fake.lock.token, op: "list_tools", id: 1 });
  });

  it("rejects an ok answer that lacks its op's body", async () => {
    const fake = await fakeDaemon((request) => line(request, { ok: true }));
    const error = await rejection(client(fake.stateDir).getSchema("s", "t"));
    expect(error.code).toBe("DAEMON_BAD_RESPONSE");
    expect(error.message).toContain("get_schema");
    expect(error.message).toContain("schema");
  });

  it("rejects a call result that is not an object", async () => {
    const fake = await fakeDaemon((request) => line(request, { ok: true, result: "done" }));
    const error = await rejection(client(fake.stateDir).callTool("s", "t", {}, { timeoutMs: 5_000 }));
    expect(error.code).toBe("DAEMON_BAD_RESPONSE");
    expect(error.message).toContain("call_tool");
    expect(error.message).toContain("result");
  });

  it("rejects call results with a wrong content or isError, or a bad id, naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ok: true, result: { content: "text" } }, "result.content"],
      [{ ok: true, result: { content: [], isError: "yes" } }, "result.isError"],
    ];
    for (const [body, field] of cases) {
      const fake = await fakeDaemon((request) => line(request, body));
      const error = await rejection(client(fake.stateDir).callTool("s", "t", {}, { timeoutMs: 5_000 }));
      expect(error.code).toBe("DAEMON_BAD_RESPONSE");
      expect(error.message).toContain("call_tool");
      expect(error.message).toContain(field);
    }
    // An answer whose id is not one the protocol allows cannot be matched to its call.
    const fake = await fakeDaemon(() => JSON.stringify({ id: { n: 1 }, ok: true, result: { content: [] } }));
    const error = await rejection(client(fake.stateDir).callTool("s", "t", {}, { timeoutMs: 5_000 }));
    expect(error.code).toBe("DAEMON_BAD_RESPONSE");
  });

  it("hands a well-formed call result over with the members the protocol does not name", async () => {
    const result = { content: [{ type: "text", text: "hi" }], structuredContent: { n: 1 }, _meta: { trace: "t" } };
    const fake = await fakeDaemon((request) => line(request, { ok: true, result }));
    expect(await client(fake.stateDir).callTool("s", "t", {}, { timeoutMs: 5_000 })).toEqual(result);
  });

  it("rejects a failure whose error has no message instead of inventing one", async () => {
    const fake = await fakeDaemon((request) => line(request, { ok: false, error: { code: "TOOL_NOT_FOUND", retryable: false } }));
    const error = await rejection(client(fake.stateDir).refresh());
    expect(error.code).toBe("DAEMON_BAD_RESPONSE");
    expect(error.message).toContain("error.message");
  });

  it("rejects a line that is not JSON", async () => {
    const fake = await fakeDaemon(() => "this is not json");
    const error = await rejection(client(fake.stateDir).listTools());
    expect(error.code).toBe("DAEMON_BAD_RESPONSE");
    expect(error.message).toContain("unreadable answer");
  });

  it("rejects stats of the wrong shape in the ping that finds a daemon", async () => {
    const fake = await fakeDaemon((request) => line(request, { ok: true, stats: { pid: "not a number" } }));
    const error = await rejection(pingDaemon(fake.lock, { timeoutMs: 10_000 }));
    expect(error.code).toBe("DAEMON_BAD_RESPONSE");
    expect(error.message).toContain("stats.version");
  });

  it("still passes on a well-formed failure with the daemon's own code", async () => {
    const fake = await fakeDaemon((request) => line(request, { ok: false, error: { code: "TOOL_NOT_FOUND", message: "no tool t on s", retryable: false } }));
    const error = await rejection(client(fake.stateDir).getSchema("s", "t"));
    expect(error.code).toBe("TOOL_NOT_FOUND");
    expect(error.message).toBe("no tool t on s");
  });
});
