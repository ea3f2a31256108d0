import { configJsonSchema } from "./configJsonSchema.js";
import { describeValue, formatPath } from "./formatIssues.js";
import { didYouMean } from "../util/suggest.js";
import { setOwn } from "./setOwn.js";
import { isObject } from "../model/json.js";

/**
 * MCP client config files (Claude Desktop / Cursor / Claude Code `mcpServers`, VS Code `servers` +
 * `inputs`) read as abridge config, so a user can point abridge at the file they already have.
 *
 * Keys of server entries that belong to the client are handled deliberately; anything else there
 * stays an unknown-key error, because a silently ignored typo (`comand`) is worse than a refused file.
 *
 * Mapped, per server:
 * - `disabled: true` (Claude Desktop, Cline, Roo) -> `enabled = false`.
 * - `type` / `transport` (VS Code, Claude Code, Cursor, Cline): "stdio"; "http", "streamable-http",
 *   "streamableHttp", "streamable_http" -> "http"; "sse" -> "sse".
 * - `serverUrl` (Windsurf) -> `url`.
 *
 * Ignored, per server:
 * - `autoApprove`, `alwaysAllow` (Cline/Roo approval lists): abridge does not ask for approval;
 *   `deny`/`read_only` are its policy tools.
 * - `description`: a note for humans.
 * - `dev` (VS Code watch/debug settings): only meaningful inside the editor.
 * - `envFile` (VS Code): reading a second file is out of scope; a warning says so, since the
 *   server may then miss variables it expects.
 *
 * Ignored at the top level: `inputs` (VS Code prompt definitions; a `${input:...}` reference is an
 * error at expansion time since nobody can be prompted) and `$schema`; any other key the client
 * keeps there (Claude Desktop's `globalShortcut`, `preferences`) with a warning, since the file is
 * the client's and must load unchanged. Inside server entries unknown keys stay errors, and so do
 * one of abridge's own top-level settings (it belongs in the `abridge` object) and a near miss of
 * a key abridge reads (`mcpServer`).
 * Allowed at the top level: an `"abridge": {...}` object carrying abridge's own global keys
 * (mode, separator, summary, ...).
 */

/** A problem found while mapping, already at the path the user wrote. */
export interface McpJsonProblem {
  path: string;
  message: string;
}

/** Result of {@link normalizeMcpJson}. */
export interface NormalizedMcpJson {
  /** abridge's own shape, ready for expansion and validation. */
  input: Record<string, unknown>;
  problems: McpJsonProblem[];
  warnings: string[];
  /** Maps a path in `input` back to the path in the client file. */
  displayPath: (path: readonly PropertyKey[]) => PropertyKey[];
}

const CLIENT_TOP_KEYS = ["mcpServers", "servers", "inputs", "abridge", "$schema"] as const;

const IGNORED_SERVER_KEYS = new Set(["autoApprove", "alwaysAllow", "description", "dev", "envFile"]);

const TRANSPORT_ALIASES: Record<string, "stdio" | "http" | "sse"> = {
  stdio: "stdio",
  http: "http",
  "streamable-http": "http",
  streamableHttp: "http",
  streamable_http: "http",
  sse: "sse",
};

/**
 * True when a parsed JSON document is a client file rather than abridge's own shape: it has
 * `mcpServers`, `inputs` or an `abridge` block, or nothing but `servers` (then both readings
 * agree, and the client reading also accepts client keys such as `disabled`).
 */
export function isMcpJson(doc: Record<string, unknown>): boolean {
  const keys = Object.keys(doc).filter((k) => k !== "$schema");
  if (keys.includes("mcpServers") || keys.includes("inputs") || keys.includes("abridge")) return true;
  return keys.length > 0 && keys.every((k) => k === "servers");
}

/** Maps a client file to abridge's config shape (see the module comment for what is mapped). */
export function normalizeMcpJson(doc: Record<string, unknown>): NormalizedMcpJson {
  const problems: McpJsonProblem[] = [];
  const warnings: string[] = [];
  const input: Record<string, unknown> = {};
  const problem = (path: readonly PropertyKey[], message: string): void => {
    problems.push({ path: formatPath(path), message });
  };

  for (const key of Object.keys(doc)) {
    if ((CLIENT_TOP_KEYS as readonly string[]).includes(key)) continue;
    // One of abridge's own settings at the top level was meant for abridge: say where it goes.
    if (configJsonSchema().properties?.[key] !== undefined) {
      problem([], `unknown key ${JSON.stringify(key)}; in an MCP client file abridge's own settings go in the "abridge" object`);
      continue;
    }
    // A near miss of a key abridge reads (`mcpServer`) is a typo that would drop servers silently.
    const hint = didYouMean(key, CLIENT_TOP_KEYS);
    if (hint !== undefined) {
      problem([], `unknown key ${JSON.stringify(key)}; did you mean ${JSON.stringify(hint)}?`);
      continue;
    }
    // Anything else belongs to the client (Claude Desktop writes `globalShortcut`, `preferences`...):
    // the user's unchanged file must load, so it is skipped with a warning, not refused.
    warnings.push(`ignored top-level key ${JSON.stringify(key)}: not an MCP server setting abridge reads`);
  }

  const serversKey = "mcpServers" in doc ? "mcpServers" : "servers";
  if ("mcpServers" in doc && "servers" in doc) {
    problem([], `expected either "mcpServers" or "servers", got both`);
  }

  const block = doc["abridge"];
  if (block !== undefined) {
    if (!isObject(block)) {
      problem(["abridge"], `expected an object, got ${describeValue(block, "json")}`);
    } else {
      for (const [key, value] of Object.entries(block)) {
        if (key === "servers") {
          problem(["abridge"], `unknown key "servers"; servers go in "${serversKey}"`);
          continue;
        }
        setOwn(input, key, value);
      }
    }
  }

  // Per server: keys renamed on the way in, so error paths can show the user's spelling.
  const renamed = new Map<string, Map<string, string>>();
  const rawServers = doc[serversKey];
  const servers: Record<string, unknown> = {};
  if (rawServers !== undefined && !isObject(rawServers)) {
    problem([serversKey], `expected an object, got ${describeValue(rawServers, "json")}`);
  } else if (rawServers !== undefined) {
    for (const [name, entry] of Object.entries(rawServers)) {
      if (!isObject(entry)) {
        // Passed on as is: validation reports it with the schema's wording.
        setOwn(servers, name, entry);
        continue;
      }
      const renames = new Map<string, string>();
      renamed.set(name, renames);
      setOwn(servers, name, mapServer(entry, [serversKey, name], renames, problem, warnings));
    }
  }
  input["servers"] = servers;

  const displayPath = (path: readonly PropertyKey[]): PropertyKey[] => {
    if (path[0] !== "servers") return ["abridge", ...path];
    const [, name, field, ...rest] = path;
    if (name === undefined) return [serversKey];
    if (field === undefined) return [serversKey, name];
    const original = renamed.get(String(name))?.get(String(field)) ?? field;
    return [serversKey, name, original, ...rest];
  };
  return { input, problems, warnings, displayPath };
}

function mapServer(
  entry: Record<string, unknown>,
  at: readonly PropertyKey[],
  renames: Map<string, string>,
  problem: (path: readonly PropertyKey[], message: string) => void,
  warnings: string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entry)) {
    if (IGNORED_SERVER_KEYS.has(key)) {
      if (key === "envFile") {
        warnings.push(`${formatPath([...at, key])}: envFile is not read by abridge; put the variables in "env"`);
      }
      continue;
    }
    if (key === "disabled" || key === "type" || key === "transport" || key === "serverUrl") continue;
    setOwn(out, key, value);
  }

  if ("disabled" in entry) {
    const disabled = entry["disabled"];
    if (typeof disabled !== "boolean") {
      problem([...at, "disabled"], `expected true or false, got ${describeValue(disabled, "json")}`);
    } else if ("enabled" in entry) {
      problem(at, `expected either "disabled" or "enabled", got both`);
    } else {
      out["enabled"] = !disabled;
      renames.set("enabled", "disabled");
    }
  }

  let transport: "stdio" | "http" | "sse" | undefined;
  for (const key of ["type", "transport"] as const) {
    if (!(key in entry)) continue;
    const raw = entry[key];
    const mapped = typeof raw === "string" ? TRANSPORT_ALIASES[raw] : undefined;
    if (mapped === undefined) {
      const allowed = Object.keys(TRANSPORT_ALIASES)
        .map((k) => JSON.stringify(k))
        .join(", ");
      problem([...at, key], `expected one of ${allowed}, got ${describeValue(raw, "json")}`);
    } else if (transport !== undefined && transport !== mapped) {
      problem(at, `expected "type" and "transport" to agree, got ${JSON.stringify(entry["type"])} and ${JSON.stringify(raw)}`);
    } else {
      transport = mapped;
      if (key === "transport" && !("type" in entry)) renames.set("type", "transport");
    }
  }
  if (transport !== undefined) out["type"] = transport;

  if ("serverUrl" in entry) {
    if ("url" in entry) {
      problem(at, `expected either "url" or "serverUrl", got both`);
    } else {
      out["url"] = entry["serverUrl"];
      renames.set("url", "serverUrl");
    }
  }
  return out;
}
