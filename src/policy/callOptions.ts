import type { Mode } from "../catalog/types.js";
import type { ClientRelay } from "../model/types.js";
import type { AuditRun } from "./auditLog.js";

/** Options of a call made through the bridge. */
export interface BridgeCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  onProgress?: (update: { progress: number; total?: number; message?: string }) => void;
  /**
   * The mode the caller was shown. In `compact` and `lazy` the model saw no full schema, so
   * arguments are validated against it before forwarding; in `full` and `summary` it did.
   */
  mode?: Mode;
  /** Who is calling, for the audit log (`stdio`, `http`, `daemon`, `cli`). */
  client?: string;
  /** Where the upstream's sampling and elicitation requests and log lines made during the call go. */
  relay?: ClientRelay;
  /** For a call a program made: its run, recorded in the audit log. */
  run?: AuditRun;
}
