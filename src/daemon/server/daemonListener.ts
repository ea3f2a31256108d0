import { randomBytes } from "node:crypto";
import { chmod, link, rename, stat, unlink } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { platform } from "node:os";
import { dirname, join } from "node:path";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import type { DaemonAddress } from "../wire/protocol.js";

/** A listener bound for a daemon, with the connections it accepted before the daemon exists. */
export interface BoundListener {
  server: Server;
  waiting: WaitingRoom;
  address: DaemonAddress;
  /** The unix socket's file (a unix listener only). */
  socketFile?: SocketFile;
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
  return new AbridgeError(ErrorCode.DAEMON_UNAVAILABLE, `cannot listen on ${where}: ${messageOf(err)}`, { cause: err });
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

/** Where a daemon listens: loopback TCP on a free port, or a unix socket at `path`. */
export type ListenTarget = { kind: "tcp" } | { kind: "unix"; path: string };

/** Name of the daemon's unix socket in its state directory. */
export const SOCKET_FILE_NAME = "daemon.sock";

/**
 * Longest path a unix socket can be bound or reached at, in bytes: `sun_path` less its NUL, 108
 * bytes on Linux, 104 on macOS and the BSDs.
 */
export const MAX_SOCKET_PATH_BYTES = platform() === "linux" ? 107 : 103;

/**
 * The name a unix socket is bound at before it is published at its path (see {@link bindListener}):
 * a sibling of it, no longer than the default `daemon.sock`.
 */
function bindingName(path: string): string {
  return join(dirname(path), `.s-${randomBytes(4).toString("hex")}`);
}

/** Why a unix socket cannot be at `path` (its path or the name it is bound at is too long), if so. */
export function socketPathProblem(path: string): string | undefined {
  const bytes = Math.max(Buffer.byteLength(path), Buffer.byteLength(bindingName(path)));
  return bytes > MAX_SOCKET_PATH_BYTES
    ? `the socket path ${path} is ${Buffer.byteLength(path)} bytes, over the ${MAX_SOCKET_PATH_BYTES} a unix socket allows (with its sibling name)`
    : undefined;
}

/** Whether this platform gives node unix sockets (Windows gives named pipes instead). */
export function hasUnixSockets(): boolean {
  return platform() !== "win32";
}

/** A bound listener's unix socket file: its published path and its inode (to remove only our own). */
export interface SocketFile {
  path: string;
  ino: number;
  /** The name it was bound at, while it is not published at `path` yet. */
  bound: string | undefined;
}

/**
 * Binds the daemon's listener: a free TCP port on 127.0.0.1, or a unix socket at `target.path`.
 *
 * A unix socket is bound at a fresh sibling name, then hard-linked to its path, which succeeds
 * only when nothing is there: two daemons starting at once never replace each other's socket, and
 * the socket is reachable before the lockfile names it. When a file is there already (a dead
 * daemon's socket, or one of a daemon starting beside this one), the socket is published with
 * {@link publishSocket} once the lockfile is taken. The listener is closed by its bound name, so
 * closing it never removes the path from under a daemon that took the lockfile over.
 */
export async function bindListener(target: ListenTarget): Promise<BoundListener> {
  const server = createServer({ pauseOnConnect: false });
  const waiting = new WaitingRoom(server);
  if (target.kind === "unix" && !hasUnixSockets()) {
    // A named pipe (Windows): no file to publish or remove.
    await listen(server, { path: target.path }).catch((err: unknown) => {
      throw bindError(target.path, err);
    });
    return { server, waiting, address: { kind: "unix", path: target.path } };
  }
  if (target.kind === "unix") {
    const problem = socketPathProblem(target.path);
    if (problem !== undefined) throw bindError(target.path, new Error(problem));
    let bound = bindingName(target.path);
    for (let attempt = 0; ; attempt++) {
      try {
        await listen(server, { path: bound });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE" || attempt >= 4) throw bindError(target.path, err);
        bound = bindingName(target.path);
      }
    }
    const file: SocketFile = { path: target.path, ino: 0, bound };
    try {
      // The state dir keeps other users out already (0700); a socket elsewhere is its owner's only.
      await chmod(bound, 0o600);
      file.ino = (await stat(bound)).ino;
      await link(bound, target.path);
      file.bound = undefined;
      await unlinkQuietly(bound);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
        await waiting.close();
        throw bindError(target.path, err);
      }
    }
    return { server, waiting, address: { kind: "unix", path: target.path }, socketFile: file };
  }
  await listen(server, { port: 0, host: "127.0.0.1" }).catch((err: unknown) => {
    throw bindError("127.0.0.1:0", err);
  });
  const bound = server.address();
  if (bound === null || typeof bound === "string") throw new AbridgeError(ErrorCode.INTERNAL, "listener has no TCP address");
  return { server, waiting, address: { kind: "tcp", host: "127.0.0.1", port: bound.port } };
}

/**
 * Puts a bound unix socket at its path, replacing whatever is there: called once the lockfile is
 * taken, so what it replaces is a dead daemon's socket or one of a daemon that lost the lock.
 */
export async function publishSocket(file: SocketFile): Promise<void> {
  if (file.bound === undefined) return;
  try {
    await rename(file.bound, file.path);
  } catch (err) {
    throw bindError(file.path, err);
  }
  file.bound = undefined;
}

/**
 * Removes the socket at `file.path` if it is still this listener's (a daemon that took the
 * lockfile over may have put its own there).
 */
export async function removeSocket(file: SocketFile): Promise<void> {
  const seen = await stat(file.path).catch(() => undefined);
  if (seen?.ino === file.ino) await unlinkQuietly(file.path);
}
