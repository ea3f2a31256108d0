import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Logger } from "../../log/logger.js";
import { compareStrings } from "../../model/json.js";
import type { RawTool } from "../../model/types.js";
import { listToolsResult } from "./callForwarder.js";
import { collectPages } from "./collectPages.js";
import { admitTool, type AdmittedTool } from "../admitTool.js";
import { UpstreamClient, withEnvelope } from "./upstreamClient.js";
import { scanHeaderDeclarations } from "./paramHeaders.js";

/**
 * Every page of a server's `tools/list`, cleaned for every later walk: a tool nested too deep is
 * quarantined, `null` members are dropped, a tool without a name or inputSchema and a second
 * tool of the same name are skipped (each with a warning). Sorted by name; otherwise as sent.
 * Every page is bounded by `timeoutMs` and by `signal`. Over the stateless revision each page
 * carries the request envelope, and the last page's `ttlMs` is left on the client.
 */
export async function listTools(client: Client, logger: Logger, timeoutMs: number, signal?: AbortSignal): Promise<AdmittedTool[]> {
  const items = await collectPages(
    async (cursor) => {
      const result = await client.request({ method: "tools/list", params: withEnvelope(client, cursor === undefined ? {} : { cursor }) }, listToolsResult, {
        timeout: timeoutMs,
        ...(signal ? { signal } : {}),
      });
      // A stateless server says how long its list may be kept: the connection's re-list hint.
      if (client instanceof UpstreamClient) client.lastListTtlMs = typeof result.ttlMs === "number" ? result.ttlMs : undefined;
      return { items: result.tools, nextCursor: result.nextCursor };
    },
    logger,
    "tools/list",
    signal,
  );
  const byName = new Map<string, AdmittedTool>();
  if (client instanceof UpstreamClient) client.headerDeclarations = new Map();
  // The one admission rule (see admitTool). A tool nested too deep would overflow the stack of
  // every later walk: quarantined first, with a reason; its siblings are served.
  const admissions = items.map(admitTool);
  for (const admission of admissions) {
    if (!admission.ok && admission.problem.reason === "tooDeep")
      logger.warn("tool quarantined", { tool: admission.problem.name, reason: admission.problem.message });
  }
  for (const admission of admissions) {
    if (!admission.ok) {
      if (admission.problem.reason !== "tooDeep") logger.warn("skipping a malformed tool (no name or inputSchema)", { tool: admission.problem.name });
      continue;
    }
    const tool = admission.tool;
    if (!headersValid(client, tool, logger)) continue;
    if (byName.has(tool.name)) {
      logger.warn("skipping a duplicate tool", { tool: tool.name });
      continue;
    }
    byName.set(tool.name, tool);
  }
  return [...byName.values()].sort((a, b) => compareStrings(a.name, b.name));
}

/**
 * Over 2026-07-28, a tool whose `x-mcp-header` declarations break the revision's rules is not to
 * be used (skipped, with a warning naming the fault); the declarations of the others are kept on
 * the client for the `Mcp-Param-*` headers of their calls. Over the older revisions the extension
 * means nothing and every tool passes.
 */
function headersValid(client: Client, tool: RawTool, logger: Logger): boolean {
  if (!(client instanceof UpstreamClient) || client.era !== "stateless") return true;
  const scan = scanHeaderDeclarations(tool.inputSchema);
  if ("invalid" in scan) {
    logger.warn("skipping a tool with an invalid x-mcp-header", { tool: tool.name, reason: scan.invalid });
    return false;
  }
  if (scan.declarations.length > 0) client.headerDeclarations.set(tool.name, scan.declarations);
  return true;
}
