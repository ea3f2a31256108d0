import { unlink } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { judgeLock, readLock, type LockInfo } from "../wire/lockfile.js";
import type { DaemonAddress } from "../wire/protocol.js";

/** A listener bound for a daemon, with the connections it accepted before the daemon exists. */
export interface BoundListener {
  status: "bound";
  server: Server;
  waiting: WaitingRoom;
  address: DaemonAddress;
}

/** The socket path is a live daemon's: nothing was bound. */
export interface HeldByOther {
  status: "running";
  holder: LockInfo;
}

function listen(server: Server, target: { port: number; host: string } | { path: string }): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once("error", onError);
    server.listen(target, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

export async function unlinkQuietly(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}

function bindError(where: string, err: unknown): AbridgeError {
  return new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, `cannot listen on ${where}: ${(err as Error).message}`, { cause: err });
}

/**
 * Holds the connections a listener accepts before the daemon exists to serve them. The lockfile
 * names the address as soon as it is written, while the bridge is still opening, and a client
 * polling for it connects at once. A socket accepted with no `connection` listener is orphaned:
 * never read, never closed, and `server.close()` (which waits for every accepted socket) would
 * never call back, keeping the daemon and its upstream children alive after a stop. The bytes a
 * held socket receives stay buffered until the daemon adopts it.
 */
export class WaitingRoom {
  private readonly held = new Set<Socket>();
  private readonly hold = (socket: Socket): void => {
    this.held.add(socket);
    socket.once("close", () => this.held.delete(socket));
  };

  constructor(private readonly server: Server) {
    server.on("connection", this.hold);
  }

  /** Stops holding new connections and hands over those still open. */
  release(): Socket[] {
    this.server.off("connection", this.hold);
    const sockets = [...this.held];
    this.held.clear();
    return sockets;
  }

  /** Start-up failed: ends every held connection, then the listener. */
  async close(): Promise<void> {
    for (const socket of this.release()) socket.destroy();
    await closeServer(this.server);
  }
}

/**
 * Binds the daemon's listener: the Unix socket at `socketPath`, or a free TCP port on 127.0.0.1.
 * A socket file already in use is the live daemon's when the lockfile says so (nothing is bound,
 * the holder is returned), else a dead daemon's leftover, which is removed and bound again.
 */
export async function bindListener(socketPath: string | undefined, lockFile: string): Promise<BoundListener | HeldByOther> {
  const server = createServer({ pauseOnConnect: false });
  const waiting = new WaitingRoom(server);
  if (socketPath !== undefined) {
    try {
      await listen(server, { path: socketPath });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw bindError(socketPath, err);
      const seen = await readLock(lockFile);
      if (seen.state === "ok" && (await judgeLock(seen)) === "live") return { status: "running", holder: seen.lock };
      await unlinkQuietly(socketPath);
      await listen(server, { path: socketPath }).catch((again: unknown) => {
        throw bindError(socketPath, again);
      });
    }
    return { status: "bound", server, waiting, address: { kind: "unix", path: socketPath } };
  }
  await listen(server, { port: 0, host: "127.0.0.1" }).catch((err: unknown) => {
    throw bindError("127.0.0.1:0", err);
  });
  const bound = server.address();
  if (bound === null || typeof bound === "string") throw new AbridgeError(ErrorCode.INTERNAL, "listener has no TCP address");
  return { status: "bound", server, waiting, address: { kind: "tcp", host: "127.0.0.1", port: bound.port } };
}
