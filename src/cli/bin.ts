#!/usr/bin/env node
// The only file that touches `process`: it turns signals into an AbortSignal and the returned
// code into the exit status. Everything else is `runCli`, which tests call directly.
import { runCli } from "./runCli.js";

const controller = new AbortController();
let interrupts = 0;
const onSignal = (signal: NodeJS.Signals): void => {
  interrupts += 1;
  // A second Ctrl-C means "now": whatever is already written stays written (appends are single
  // atomic writes), so leaving at once loses nothing.
  if (interrupts > 1) process.exit(signal === "SIGINT" ? 130 : 143);
  controller.abort(new Error(`received ${signal}`));
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  signal: controller.signal,
  isTTY: Boolean(process.stderr.isTTY),
});
process.exitCode = code;
