/**
 * A host application in miniature: a plain script whose only work is to reach abridge through the
 * daemon. Args: <stateDir> <configFile>. Prints one JSON line: the daemon's pid and a call result.
 */
import { DaemonClient } from "../../src/daemon/client/daemonClient.js";

const [stateDir, config] = process.argv.slice(2);
if (!stateDir || !config) throw new Error("usage: hostScript <stateDir> <configFile>");
const client = new DaemonClient({ stateDir, autoStart: { config, env: { PATH: process.env.PATH, HOME: process.env.HOME } } });
const tools = await client.loadTools();
const echo = tools.find((t) => t.name === "echo");
if (!echo) throw new Error("no echo tool");
const result = await client.executeTool(echo, { text: "from a script" });
const info = await client.connect();
client.close();
process.stdout.write(`${JSON.stringify({ pid: info.pid, result })}\n`);
