/**
 * The JavaScript names of servers and tools in the code view: a server is a namespace and each of
 * its tools a function in it (`filesystem.read_text_file(...)`). The declarations shown to the model
 * and the runtime that binds the functions must spell every name alike, so both take them from here.
 */
import { compareStrings } from "../../model/json.js";
import { assignIdentifiers } from "../runtime/globalNames.js";

/**
 * The rule itself (which names stand as they are, how the others become identifiers) is the
 * program runtime's, so a declaration and the binding it describes cannot drift apart.
 */
export { assignIdentifiers, isPlainIdentifier, toIdentifier as codeIdentifier } from "../runtime/globalNames.js";

/** One tool as the code view names it. */
export interface CodeToolName {
  server: string;
  /** The upstream's tool name. */
  tool: string;
}

/**
 * The identifiers of a set of servers and their tools: one namespace per server, one function per
 * tool, each distinct in its scope. Build it over every tool a program can call, and use the same
 * instance for the declarations of any subset: a name settled over a subset could differ (`get-item`
 * is `get_item` alone, `get_item_2` beside a tool called `get_item`).
 */
export class CodeNames {
  private readonly namespaces: Map<string, string>;
  private readonly functions = new Map<string, Map<string, string>>();
  private readonly byIdentifier = new Map<string, { server: string; tools: Map<string, string> }>();

  private constructor(tools: Iterable<CodeToolName>) {
    const byServer = new Map<string, string[]>();
    for (const { server, tool } of tools) {
      const list = byServer.get(server);
      if (list === undefined) byServer.set(server, [tool]);
      else list.push(tool);
    }
    this.namespaces = assignIdentifiers(byServer.keys());
    for (const [server, toolNames] of byServer) {
      const assigned = assignIdentifiers(toolNames);
      this.functions.set(server, assigned);
      const reverse = new Map([...assigned].map(([tool, id]) => [id, tool]));
      this.byIdentifier.set(this.namespaces.get(server) as string, { server, tools: reverse });
    }
  }

  /** Names for `tools` (repeats are harmless). */
  static of(tools: Iterable<CodeToolName>): CodeNames {
    return new CodeNames(tools);
  }

  /** The namespace identifier of `server`, or undefined when it is not in the set. */
  namespaceOf(server: string): string | undefined {
    return this.namespaces.get(server);
  }

  /** The function identifier of `server`'s `tool`, or undefined when it is not in the set. */
  functionOf(server: string, tool: string): string | undefined {
    return this.functions.get(server)?.get(tool);
  }

  /** The server and tool a program means by `namespace.fn`, or undefined when no tool has that name. */
  resolve(namespace: string, fn: string): CodeToolName | undefined {
    const entry = this.byIdentifier.get(namespace);
    const tool = entry?.tools.get(fn);
    return entry === undefined || tool === undefined ? undefined : { server: entry.server, tool };
  }

  /** Every server as `[server, namespace]`, in code-unit order of the server names. */
  servers(): [string, string][] {
    return [...this.namespaces].sort((a, b) => compareStrings(a[0], b[0]));
  }

  /** Every tool of `server` as `[tool, function]`, in code-unit order of the tool names. */
  toolsOf(server: string): [string, string][] {
    return [...(this.functions.get(server) ?? [])].sort((a, b) => compareStrings(a[0], b[0]));
  }
}
