/**
 * A fixed exchange of a client of the handshake era (2024-11-05 to 2025-11-25) with `abridge
 * serve`, over HTTP and over stdio, recorded as the exact bytes abridge answered. The dual-era
 * tests compare it with test/fixtures/legacyTranscript.json, recorded from abridge before it
 * served revision 2026-07-28: an older client must see exactly what it saw then. The only parts
 * made constant are those that differ on every run (the session id).
 */
import type { ChildProcess } from "node:child_process";
import { Watch } from "./waitFor.js";

/** What abridge answered to each step, in order: `status content-type body` over HTTP, the line over stdio. */
export type Transcript = string[];

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: { sampling: {} }, clientInfo: { name: "legacy-client", version: "1.0.0" } },
};

/** The steps after initialize, the same over both transports. */
const STEPS: object[] = [
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
  { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "echo_echo", arguments: { text: "same bytes" } } },
  { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "nope", arguments: {} } },
  { jsonrpc: "2.0", id: 5, method: "ping" },
  { jsonrpc: "2.0", id: 6, method: "server/discover", params: {} },
  { jsonrpc: "2.0", id: 7, method: "resources/read", params: { uri: "test://missing" } },
];

async function record(res: Response): Promise<string> {
  return `${res.status} ${res.headers.get("content-type") ?? "-"} ${(await res.text()).replace(UUID, "<uuid>")}`;
}

/** The exchange over streamable HTTP at `url`, by raw fetch, as an SDK 1.x client sends it. */
export async function httpLegacyTranscript(url: string): Promise<Transcript> {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const post = (body: object, extra: Record<string, string> = {}): Promise<Response> =>
    fetch(url, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify(body) });
  const out: Transcript = [];
  // Before any session: what a client that skipped initialize gets.
  out.push(await record(await post({ jsonrpc: "2.0", id: 0, method: "tools/list" })));
  const init = await post(INITIALIZE);
  const session = init.headers.get("mcp-session-id") ?? "";
  out.push(`${await record(init)} session=${session === "" ? "none" : "<uuid>"}`);
  const withSession = { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" };
  out.push(await record(await post({ jsonrpc: "2.0", method: "notifications/initialized" }, withSession)));
  for (const step of STEPS) out.push(await record(await post(step, withSession)));
  out.push(await record(await fetch(url, { method: "DELETE", headers: withSession })));
  return out;
}

/** The exchange over the stdio of a running `abridge serve` child: each answer line, in order. */
export async function stdioLegacyTranscript(child: ChildProcess): Promise<Transcript> {
  const lines: string[] = [];
  let buffer = "";
  const arrived = new Watch();
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      lines.push(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
    }
    arrived.changed();
  });
  const send = (message: object): void => {
    child.stdin!.write(`${JSON.stringify(message)}\n`);
  };
  const answerTo = async (id: number): Promise<void> => {
    await arrived.until(() => lines.some((line) => line.includes(`"id":${id}`)), { what: `the answer to request ${id}` });
  };
  send(INITIALIZE);
  await answerTo(1);
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  for (const step of STEPS) {
    send(step);
    await answerTo((step as { id: number }).id);
  }
  return lines.map((line) => line.replace(UUID, "<uuid>"));
}
