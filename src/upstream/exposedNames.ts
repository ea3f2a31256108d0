/**
 * The names the pool exposes its servers' tools under, and the way back from a name to its
 * origin. Kept apart from `upstreamPool.ts`, which owns the connections, because naming is a pass
 * over every server's tools at once (collisions go to the server first in the config, and each
 * rename is warned about once), recomputed whenever any list changes.
 */
import type { Logger } from "../log/logger.js";
import { assignNames, type AssignedName } from "../model/names.js";
import type { Upstream } from "./upstream.js";

/** The exposed names of every server's tools, by name and by origin. */
export class ExposedNames {
  private readonly separator: string;
  private readonly logger: Logger;
  private names: AssignedName[] = [];
  private byName = new Map<string, AssignedName>();
  private byOrigin = new Map<string, AssignedName>();
  /** Renames already warned about (`server\0tool\0name`), so a relist does not repeat them. */
  private readonly warnedRenames = new Set<string>();

  constructor(separator: string, logger: Logger) {
    this.separator = separator;
    this.logger = logger;
  }

  /**
   * Recomputes every exposed name from the current tool lists; `configOrder` ranks the servers
   * for collisions. Throws, keeping the previous names, when a name cannot be made unique.
   */
  assign(connections: Iterable<Upstream>, configOrder: ReadonlyMap<string, number>): void {
    const requests = [];
    for (const connection of connections) {
      for (const tool of connection.tools()) {
        const order = configOrder.get(connection.name);
        requests.push({ server: connection.name, tool: tool.name, prefix: connection.config.prefix, ...(order !== undefined ? { order } : {}) });
      }
    }
    this.names = assignNames(requests, this.separator);
    for (const n of this.names) {
      if (n.renamed === undefined) continue;
      const key = `${n.server}\0${n.tool}\0${n.name}`;
      if (this.warnedRenames.has(key)) continue;
      this.warnedRenames.add(key);
      this.logger.warn("tool name taken by another tool; exposed under another name", {
        server: n.server,
        tool: n.tool,
        wanted: n.renamed.wanted,
        exposedAs: n.name,
        keptBy: `${n.renamed.keptBy.server}/${n.renamed.keptBy.tool}`,
      });
    }
    this.byName = new Map(this.names.map((n) => [n.name, n]));
    this.byOrigin = new Map(this.names.map((n) => [`${n.server}\0${n.tool}`, n]));
  }

  /** The name assigned to a server's tool, or `undefined` when it is not exposed. */
  of(server: string, tool: string): AssignedName | undefined {
    return this.byOrigin.get(`${server}\0${tool}`);
  }

  /** The name assigned under an exposed name. */
  named(exposedName: string): AssignedName | undefined {
    return this.byName.get(exposedName);
  }
}
