#!/usr/bin/env node
// The only file that touches `process`: it turns signals and a closed stdout into an AbortSignal
// and the returned code into the exit status. Everything else is `runCli`, which tests call directly.
import { OutputClosedError } from "./cliIo.js";
import { ExitCode } from "./command.js";
import { runCli } from "./runCli.js";

const controller = new AbortController();
let interrupts = 0;
const onSignal = (signal: NodeJS.Signals): void => {
  interrupts += 1;
  // A second Ctrl-C means "now": whatever is already written stays written (appends are single
  // atomic writes), so leaving at once loses nothing.
  if (interrupts > 1) process.exit(signal === "SIGINT" ? ExitCode.INTERRUPTED : ExitCode.TERMINATED);
  controller.abort(new Error(`received ${signal}`));
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

// `abridge tools | head`: once head exits, the next write fails with EPIPE. Unheard, that error
// ends the process with a stack trace and before the bridge can end its upstream children; heard,
// it stops the command like a signal would, quietly. The listeners stay for good: writes already
// queued fail after the first error too. A broken stderr has nobody left to tell.
process.stdout.on("error", (err) => {
  if (!controller.signal.aborted) controller.abort(new OutputClosedError(err));
});
process.stderr.on("error", () => undefined);

let settled = false;
// The event loop ran dry while the command was still pending: nothing can finish it any more.
// Node would exit with 13 ("unsettled top-level await") and no word; say so and exit 1 instead.
process.once("beforeExit", () => {
  if (settled) return;
  process.stderr.write("abridge: the command stopped before it finished (nothing left to wait for) [INTERNAL]\n");
  process.exit(ExitCode.FAILURE);
});

/** How long output nobody may read still gets to drain before the process leaves without it. */
const ABANDONED_OUTPUT_GRACE_MS = 1_000;
let outputAbandoned = false;

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  signal: controller.signal,
  isTTY: Boolean(process.stderr.isTTY),
  abandonOutput: () => (outputAbandoned = true),
});
settled = true;
process.exitCode = code;
if (outputAbandoned && process.stdout.writableLength > 0) {
  // A write waiting on a pipe nobody reads keeps the event loop alive for good: `serve` would
  // linger after its client ended stdin. Its children are already gone; a moment to drain, then exit.
  await new Promise<void>((resolve) => {
    process.stdout.once("drain", resolve);
    setTimeout(resolve, ABANDONED_OUTPUT_GRACE_MS).unref();
  });
  process.exit(code);
}
