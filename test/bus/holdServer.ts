/**
 * An upstream for the bus's limits: calls and re-lists that last until the test lets them go.
 * - `hold {name}` appends `name` to the `--arrivals` file, then waits until the file
 *   `<--gates>/<name>` exists, and answers "released <name>".
 * - `echo {text}` answers `text` at once.
 * - Every tools/list appends a line to the `--lists` file; while the file `--list-hold` exists,
 *   tools/list waits for it to be removed (the list at start is made before a test creates it).
 * `--marker` only marks the command line, so a test can tell the process was reaped.
 */
import { appendFileSync, existsSync } from "node:fs";
import path from "node:path";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { stringArg } from "../fixtures/fixtureArgs.js";

const arrivals = stringArg("arrivals", "");
const gates = stringArg("gates", "");
const lists = stringArg("lists", "");
const listHold = stringArg("list-hold", "");

/** Resolves once `holds()` is true (checked every 10 ms: the test's files are another process's). */
async function until(holds: () => boolean): Promise<void> {
  while (!holds()) await new Promise((resolve) => setTimeout(resolve, 10));
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
  if (listHold !== "") await until(() => !existsSync(listHold));
  return { tools };
});
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const args = (request.params.arguments ?? {}) as Record<string, unknown>;
  if (request.params.name === "hold") {
    const name = String(args.name);
    if (arrivals !== "") appendFileSync(arrivals, `${name}\n`);
    await until(() => existsSync(path.join(gates, name)));
    return { content: [{ type: "text", text: `released ${name}` }] };
  }
  return { content: [{ type: "text", text: String(args.text) }] };
});
await server.connect(new StdioServerTransport());
