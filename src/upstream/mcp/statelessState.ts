import type { Logger } from "../../log/logger.js";
import type { JsonObject } from "../../model/types.js";
import { paramHeaders } from "./paramHeaders.js";
import type { HeaderDeclaration } from "./paramHeaders.js";
import { listenForToolChanges } from "./toolSubscription.js";
import { TtlRelist } from "./ttlRelist.js";
import type { UpstreamClient } from "./upstreamClient.js";

/**
 * What a connection keeps of its server's tool list for the stateless revision: the re-list its
 * `ttlMs` asks for (ttlRelist.ts), the subscription to `tools/list_changed`
 * (toolSubscription.ts) and the `x-mcp-header` declarations its calls' headers come from
 * (paramHeaders.ts). For a server of the older revisions none of them does anything.
 */
export class StatelessState {
  private readonly ttl: TtlRelist;
  private declarations = new Map<string, HeaderDeclaration[]>();

  /** `relist` re-lists the tools (the connection's debounced scheduler); `minTtlMs` see TtlRelist. */
  constructor(relist: () => void, minTtlMs?: number) {
    this.ttl = new TtlRelist(relist, minTtlMs);
  }

  /** A start listed the tools over `client`: plan the re-list, keep the declarations, listen for changes. */
  started(client: UpstreamClient, signal: AbortSignal, logger: Logger, current: () => boolean): void {
    this.listed(client);
    listenForToolChanges(client, signal, logger, current);
  }

  /** A list came in over `client` (a start or a re-list). */
  listed(client: UpstreamClient): void {
    this.declarations = client.headerDeclarations;
    this.ttl.listed(client.lastListTtlMs);
  }

  /** The `Mcp-Param-*` headers of a call of `tool` with `args`. */
  headers(tool: string, args: JsonObject): Record<string, string> {
    const declarations = this.declarations.get(tool);
    return declarations === undefined ? {} : paramHeaders(declarations, args);
  }

  /** The connection closed and will restart: no re-list until the next start. */
  stop(): void {
    this.ttl.stop();
  }

  /** The connection is closing for good. */
  close(): void {
    this.ttl.close();
  }
}
