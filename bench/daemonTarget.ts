import { existsSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "./corpus.js";
import type { Connected } from "./mcpTarget.js";

/** Options of {@link connectDaemon}. */
export interface DaemonTargetOptions {
  config: string;
  cacheDir: string;
  signal?: AbortSignal;
}

/** The daemon client module, looked up at run time: it is being built alongside the bench. */
const CLIENT_DIR = path.join(REPO_ROOT, "src", "client");

/**
 * Starts (or finds) the daemon for `config` through `src/client` (`ensureDaemon`, `DaemonClient`)
 * and returns it as a call target. Throws "not available: ..." while the client is not there.
 */
export async function connectDaemon(_options: DaemonTargetOptions): Promise<Connected> {
  const entry = ["index.ts", "daemonClient.ts", "ensureDaemon.ts"].map((f) => path.join(CLIENT_DIR, f)).find((f) => existsSync(f));
  if (entry === undefined) throw new Error("not available: the daemon client (src/client: ensureDaemon, DaemonClient) is not in the tree yet");
  throw new Error(`not available: the daemon client API in ${path.relative(REPO_ROOT, entry)} is not wired into the bench yet`);
}
