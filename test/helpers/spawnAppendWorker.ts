import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WORKER = fileURLToPath(new URL("./appendWorker.ts", import.meta.url));

/** A running appendWorker. */
export interface AppendWorker {
  child: ChildProcess;
  /** Resolves once the worker has opened the store and waits for `go()`. */
  ready: Promise<void>;
  /** Lets the worker start appending. */
  go(): void;
  /** Resolves when the worker exited with code 0; rejects with its stderr otherwise. */
  done: Promise<void>;
}

/** Spawns `node --import tsx appendWorker.ts <file> <server> <count>` as a real child process. */
export function spawnAppendWorker(file: string, server: string, count: number): AppendWorker {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER, file, server, String(count)], {
    cwd: REPO_ROOT,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
  });
  const done = new Promise<void>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`appendWorker ${server} exited with ${code ?? signal}: ${stderr}`));
    });
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: string) => {
      stdout += chunk;
      if (stdout.includes("ready\n")) resolve();
    });
    done.then(() => reject(new Error(`appendWorker ${server} exited before it was ready`)), reject);
  });
  // Either may be left unobserved when the other settles first.
  ready.catch(() => undefined);
  done.catch(() => undefined);
  return { child, ready, done, go: () => child.stdin.write("go\n") };
}
