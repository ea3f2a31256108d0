/**
 * An upstream for the bus's limits: calls and re-lists that last until the test lets them go.
 * - `hold {name}` appends `name` to the `--arrivals` file, then waits until the file
 *   `<--gates>/<name>` exists, and answers "released <name>".
 * - `echo {text}` answers `text` at once.
 * - Every tools/list appends a line to the `--lists` file; while the file `--list-hold` exists,
 *   tools/list waits for it to be removed (the list at start is made before a test creates it).
 * `--marker` only marks the command line, so a test can tell the process was reaped.
 */
import { appendFileSync, existsSync, watch } from "node:fs";
import path from "node:path";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { stringArg } from "../fixtures/fixtureArgs.js";

const arrivals = stringArg("arrivals", "");
const gates = stringArg("gates", "");
const lists = stringArg("lists", "");
const listHold = stringArg("list-hold", "");

/**
 * Resolves once `file` exists (`present`) or is gone: checked now and on every change in its
 * folder, where the test creates and removes it. The folder is watched before the first check, so
 * a change between the two is not missed.
 */
function until(file: string, present: boolean): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(path.dirname(file));
    const check = (): void => {
      if (existsSync(file) !== present) return;
      watcher.close();
      resolve();
    };
    watcher.on("change", check);
    // The folder goes only with the test's temporary files, when this process is being ended.
    watcher.on("error", () => watcher.close());
    check();
  });
}

const tools = [
  {
    name: "hold",
    description: "Waits until the test opens the gate named name.",
    inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  },
  {
    name: "echo",
    description: "Answers its text.",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
];

const server = new Server({ name: "hold-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => {
  if (lists !== "") appendFileSync(lists, "list\n");
  if (listHold !== "") await until(listHold, false);
  return { tools };
});
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const args = (request.params.arguments ?? {}) as Record<string, unknown>;
  if (request.params.name === "hold") {
    const name = String(args.name);
    if (arrivals !== "") appendFileSync(arrivals, `${name}\n`);
    await until(path.join(gates, name), true);
    return { content: [{ type: "text", text: `released ${name}` }] };
  }
  return { content: [{ type: "text", text: String(args.text) }] };
});
await server.connect(new StdioServerTransport());
