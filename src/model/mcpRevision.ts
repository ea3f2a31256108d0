/**
 * The wire words of MCP revision 2026-07-28, the stateless one, that both sides of the bridge speak:
 * serve (to clients) and the upstream connections (to servers). Each side keeps its own behaviour;
 * the words are written once, here.
 */

/** The stateless revision: no `initialize` and no session; each request carries its revision in `_meta`. */
export const STATELESS_REVISION = "2026-07-28";

/** `_meta` keys of the per-request envelope. */
export const META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion";
export const META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo";
export const META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities";
/** `_meta` key of a stateless result naming the server. */
export const META_SERVER_INFO = "io.modelcontextprotocol/serverInfo";

/** The error a stateless server answers a revision it does not speak with (`data.supported`). */
export const RPC_UNSUPPORTED_VERSION = -32022;
