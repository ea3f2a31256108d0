/**
 * Records test/fixtures/legacyTranscript.json: the exchange of test/helpers/legacyTranscript.ts
 * against `abridge serve` of the checkout whose CLI is given (an older release, unpacked with
 * `git archive <commit> | tar -x`), in front of the echo fixture, over HTTP and over stdio.
 *
 *   npx tsx test/helpers/recordLegacyTranscript.ts <path-to-src/cli/bin.ts> <commit>
 */
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { fixtureServerToml, tempDir, TEST_STARTUP_GRACE, writeConfig } from "./cliHarness.js";
import { httpLegacyTranscript, stdioLegacyTranscript } from "./legacyTranscript.js";
import { serveOverHttp } from "./serveHarness.js";

const [bin, commit] = process.argv.slice(2);
if (bin === undefined || commit === undefined) throw new Error("usage: recordLegacyTranscript.ts <bin.ts> <commit>");
const { dir, cleanup } = await tempDir();
try {
  const config = await writeConfig(dir, [`cache_dir = "cache"`, TEST_STARTUP_GRACE, fixtureServerToml("echo", "echoServer.ts", ["--tools", "2"])].join("\n"));
  const http = await serveOverHttp(config, [], {}, bin);
  const overHttp = await httpLegacyTranscript(http.url);
  await http.stop();
  const child = spawn(process.execPath, ["--import", "tsx", bin, "serve", "--config", config], { stdio: ["pipe", "pipe", "ignore"] });
  const overStdio = await stdioLegacyTranscript(child);
  child.stdin.end();
  await new Promise((resolve) => child.once("exit", resolve));
  const file = fileURLToPath(new URL("../fixtures/legacyTranscript.json", import.meta.url));
  await writeFile(file, `${JSON.stringify({ recordedFrom: commit, http: overHttp, stdio: overStdio }, null, 2)}\n`);
  process.stdout.write(`wrote ${file}\n`);
} finally {
  await cleanup();
}
