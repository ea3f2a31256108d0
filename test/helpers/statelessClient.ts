/**
 * A client of MCP revision 2026-07-28 by raw JSON-RPC over HTTP: every request carries the
 * version, client info and capabilities in `_meta`, and the `MCP-Protocol-Version`, `Mcp-Method`
 * and `Mcp-Name` headers; no initialize, no session.
 */
export const REVISION = "2026-07-28";

/** The `_meta` of a request of this revision, with `capabilities` as the client's. */
export function statelessMeta(capabilities: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    "io.modelcontextprotocol/protocolVersion": REVISION,
    "io.modelcontextprotocol/clientInfo": { name: "stateless-test", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": capabilities,
    ...extra,
  };
}

/** What came back: status, headers, the JSON-RPC answer, and the SSE messages before it. */
export interface StatelessReply {
  status: number;
  headers: Headers;
  body: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: Record<string, unknown> } };
  events: Record<string, unknown>[];
}

let nextId = 1;

/**
 * Sends `method` with `params` (its `_meta` defaulting to {@link statelessMeta}) and reads the
 * answer, JSON or SSE. `headers` replace the default ones (a value `null` drops the header).
 */
export async function statelessRequest(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  options: { headers?: Record<string, string | null>; id?: number; meta?: Record<string, unknown> | null } = {},
): Promise<StatelessReply> {
  const id = options.id ?? nextId++;
  const meta = options.meta === null ? undefined : (options.meta ?? statelessMeta());
  const name = method === "resources/read" ? params.uri : method === "tools/call" || method === "prompts/get" ? params.name : undefined;
  const headers: Record<string, string | null> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": REVISION,
    "mcp-method": method,
    ...(typeof name === "string" ? { "mcp-name": name } : {}),
    ...options.headers,
  };
  const sent = Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== null));
  const res = await fetch(url, {
    method: "POST",
    headers: sent,
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: meta === undefined ? params : { ...params, _meta: meta } }),
  });
  const text = await res.text();
  if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) {
    return { status: res.status, headers: res.headers, body: text === "" ? {} : (JSON.parse(text) as StatelessReply["body"]), events: [] };
  }
  const messages = text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
  const answer = messages.find((m) => m.id === id) ?? {};
  return { status: res.status, headers: res.headers, body: answer as StatelessReply["body"], events: messages.filter((m) => m !== answer) };
}
