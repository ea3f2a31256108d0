import os from "node:os";
import path from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { SecretSet, silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import { expandVars, hasVarSyntax } from "./expandVars.js";
import type { EnvMap } from "./expandVars.js";
import { formatIssues, formatPath, renderProblem } from "./formatIssues.js";
import type { ConfigProblem } from "./formatIssues.js";
import { isMcpJson, normalizeMcpJson } from "./mcpJson.js";
import { parseJsonText } from "./parseJsonText.js";
import { setOwn } from "./setOwn.js";
import { isSecretName, urlSecrets } from "./urlSecrets.js";
import { configFileSchema, DEFAULT_MAX_OUTPUT_BYTES } from "./schema.js";
import { DEFAULT_RESULT_FORMAT } from "../result/resultFormat.js";
import type { Config, ConfigFile, ServerConfig } from "./schema.js";

/** Options of {@link parseConfigText}. */
export interface ParseConfigOptions {
  /** Path of the file the text came from; relative paths in the config resolve against its folder. */
  file: string;
  /** Name shown in error lines; defaults to `file` as given. */
  displayName?: string;
  /** Overrides detection by extension (`.toml`, `.json`) and content (`{` first means JSON). */
  format?: "toml" | "json";
  /** Variables for `${VAR}` expansion. */
  env: EnvMap;
  /** Receives every value expanded into `env` and `headers`, so loggers redact them. */
  secrets?: SecretSet;
  /** Home folder for `~/` in paths; defaults to `$HOME`, then the OS's idea of it. */
  homeDir?: string;
  /** Gets warnings about keys read but not acted on (e.g. VS Code's `envFile`). */
  logger?: Logger;
}

/** Native paths whose values are credentials: `servers.<name>.env.*`, `servers.<name>.headers.*`, `cache_url`. */
function isSecretPath(p: readonly PropertyKey[]): boolean {
  return (p[0] === "servers" && (p[2] === "env" || p[2] === "headers") && p.length >= 3) || (p[0] === "cache_url" && p.length === 1);
}

/** `servers.<name>.url` (native form), and `cache_url`: URLs that may carry credentials. */
function isUrlPath(p: readonly PropertyKey[]): boolean {
  return (p[0] === "servers" && p[2] === "url" && p.length === 3) || (p[0] === "cache_url" && p.length === 1);
}

/** `servers.<name>.args[i]` (native form). */
function isArgsPath(p: readonly PropertyKey[]): boolean {
  return p[0] === "servers" && p[2] === "args" && p.length === 4;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** `toml` for `.toml`, `json` for `.json`, else JSON when the text starts with `{` (TOML cannot). */
export function detectFormat(file: string, text: string): "toml" | "json" {
  const ext = path.extname(file).toLowerCase();
  if (ext === ".toml") return "toml";
  if (ext === ".json" || ext === ".jsonc") return "json";
  return text.trimStart().startsWith("{") ? "json" : "toml";
}

/**
 * Parses, expands and validates the text of a config file. Pure apart from `secrets` (filled in)
 * and `logger` warnings: no file access, so hot reload and tests hand it text directly.
 * Throws one `AbridgeError(CONFIG_INVALID)` listing every problem, one per line, with the list in
 * `details.problems`.
 */
export function parseConfigText(text: string, options: ParseConfigOptions): Config {
  const display = options.displayName ?? options.file;
  const secrets = options.secrets ?? new SecretSet();
  const logger = options.logger ?? silentLogger;
  // A BOM is what Windows editors put first; neither parser wants it.
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const format = options.format ?? detectFormat(options.file, body);

  const fail = (problems: ConfigProblem[], cause?: unknown): never => {
    const safe = problems.map((p) => ({ ...p, message: secrets.redact(p.message) }));
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, safe.map(renderProblem).join("\n"), {
      cause,
      details: { file: display, problems: safe },
    });
  };

  let doc: unknown;
  if (format === "toml") {
    try {
      doc = parseToml(body);
    } catch (err) {
      if (!(err instanceof TomlError)) throw err;
      // Only the first line: the rest is a code excerpt of the file, already pointed at by line:col.
      const first = (err.message.split("\n")[0] ?? "").replace(/^Invalid TOML document:\s*/, "");
      fail([{ file: display, path: "", line: err.line, column: err.column, message: first || "invalid TOML" }], err);
    }
  } else {
    const parsed = parseJsonText(body);
    if (!parsed.ok) fail([{ file: display, path: "", line: parsed.line, column: parsed.column, message: parsed.message }], parsed.cause);
    else doc = parsed.value;
  }
  if (!isPlainObject(doc)) {
    const got = Array.isArray(doc) ? "an array" : doc === null ? "null" : typeof doc;
    return fail([{ file: display, path: "", message: `expected an object at the top level, got ${got}` }]);
  }

  const problems: ConfigProblem[] = [];
  let input: Record<string, unknown> = doc;
  let displayPath = (p: readonly PropertyKey[]): PropertyKey[] => [...p];
  if (format === "json" && isMcpJson(doc)) {
    const normalized = normalizeMcpJson(doc);
    input = normalized.input;
    displayPath = normalized.displayPath;
    for (const p of normalized.problems) problems.push({ file: display, ...p });
    for (const warning of normalized.warnings) logger.warn(`${display}: ${warning}`);
  }

  // Expand every string value; failed references are reported once, and schema issues at the same
  // path are dropped (an unexpanded "${DOCS_URL}" is not also "not a URL").
  const failedPaths = new Set<string>();
  const expand = (value: unknown, at: PropertyKey[]): unknown => {
    if (typeof value === "string") {
      if (!hasVarSyntax(value)) {
        if (isUrlPath(at)) for (const secret of urlSecrets(value)) secrets.add(secret);
        return value;
      }
      const result = expandVars(value, options.env);
      for (const problem of result.problems) {
        problems.push({ file: display, path: formatPath(displayPath(at)), message: problem.message });
      }
      if (result.problems.length > 0) failedPaths.add(formatPath(at));
      if (isSecretPath(at)) {
        for (const v of result.substituted) secrets.add(v);
        if (result.substituted.length > 0) secrets.add(result.value);
      }
      if (isUrlPath(at)) {
        // A variable in a URL is there to keep something out of the file: typically a key in the
        // query string, which every "cannot connect to <url>" message would otherwise print.
        for (const v of result.substituted) {
          secrets.add(v);
          secrets.add(encodeURIComponent(v));
        }
        for (const secret of urlSecrets(result.value)) secrets.add(secret);
      }
      if (isArgsPath(at)) {
        for (const v of result.substituted) if (!v.startsWith("/")) secrets.add(v);
        const names = [...value.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] ?? "").filter(isSecretName);
        if (names.length > 0) {
          logger.warn(
            `${display}: ${formatPath(displayPath(at))} puts \${${names[0]}} on the command line of the server, where every local user can read it (ps); pass it through env instead`,
          );
        }
      }
      return result.value;
    }
    if (Array.isArray(value)) return value.map((item, i) => expand(item, [...at, i]));
    if (isPlainObject(value)) {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) setOwn(out, key, expand(item, [...at, key]));
      return out;
    }
    return value;
  };
  const expanded = expand(input, []);

  const result = configFileSchema.safeParse(expanded);
  if (!result.success) {
    const issues = result.error.issues.filter((issue) => !failedPaths.has(formatPath(issue.path)));
    problems.push(...formatIssues(issues, { file: display, format, input: expanded, displayPath, isSecretPath }));
  }
  if (problems.length > 0 || !result.success) {
    return fail(problems.length > 0 ? problems : [{ file: display, path: "", message: "invalid config" }]);
  }
  const homeDir = options.homeDir ?? options.env["HOME"] ?? options.env["USERPROFILE"] ?? os.homedir();
  return buildConfig(result.data, path.resolve(options.file), homeDir);
}

/** True for a command written as a relative path: it has a separator (`./x`, `bin/x`, `~/x`) and is not absolute. */
function isRelativePath(command: string): boolean {
  const hasSeparator = command.includes("/") || (path.sep === "\\" && command.includes("\\"));
  return hasSeparator && !path.isAbsolute(command);
}

/** Fills in what the schema cannot: names, transports, inherited policy and absolute paths. */
function buildConfig(file: ConfigFile, source: string, homeDir: string): Config {
  const dir = path.dirname(source);
  const resolve = (p: string): string => {
    if (p === "~") return homeDir;
    if (p.startsWith("~/")) return path.join(homeDir, p.slice(2));
    return path.resolve(dir, p);
  };
  const { servers, ...globals } = file;
  const names = Object.keys(servers).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const list: ServerConfig[] = [];
  for (const name of names) {
    const server = servers[name];
    if (server === undefined) continue;
    const { type, read_only, destructive, sandbox, max_output_bytes, spill, result_format, cwd, sandbox_write, sandbox_read, ...rest } = server;
    const entry: ServerConfig = {
      name,
      transport: rest.jsonrpc !== undefined ? "jsonrpc" : rest.recorded !== undefined ? "recorded" : (type ?? (rest.url !== undefined ? "http" : "stdio")),
      ...rest,
      sandbox_write: sandbox_write.map(resolve),
      sandbox_read: sandbox_read.map(resolve),
      read_only: read_only ?? globals.read_only ?? false,
      destructive: destructive ?? globals.destructive ?? "allow",
      sandbox: sandbox ?? globals.sandbox ?? "none",
      max_output_bytes: max_output_bytes ?? globals.max_output_bytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      spill: spill ?? globals.spill ?? false,
      result_format: result_format ?? globals.result_format ?? DEFAULT_RESULT_FORMAT,
    };
    if (cwd !== undefined) entry.cwd = resolve(cwd);
    if (entry.recorded !== undefined) entry.recorded = resolve(entry.recorded);
    if (entry.manifests !== undefined) entry.manifests = resolve(entry.manifests);
    // A unix socket given as a relative path means the same socket under serve, the CLI and a
    // daemon started elsewhere: the config's folder, as for `recorded` and `manifests`.
    if (entry.jsonrpc?.startsWith("unix:") === true) entry.jsonrpc = `unix:${resolve(entry.jsonrpc.slice("unix:".length))}`;
    if (entry.transport === "stdio") {
      // Relative paths mean the same under `serve`, the CLI and a daemon started elsewhere: the
      // config's folder is the default working directory, and a command given as a path
      // (`./server.sh`, `bin/server`) is found from there. A bare name (`npx`) stays a PATH lookup.
      if (entry.command !== undefined && isRelativePath(entry.command)) entry.command = resolve(entry.command);
      // Not inside bwrap: its fresh /tmp and hidden folders may not have the config's folder
      // (`--chdir` would fail), and a cwd there would keep a hidden folder visible.
      if (cwd === undefined && entry.sandbox === "none") entry.cwd = dir;
    }
    list.push(entry);
  }
  const config: Config = { ...globals, source, servers: list, serverOrder: Object.keys(servers) };
  if (globals.cache_dir !== undefined) config.cache_dir = resolve(globals.cache_dir);
  if (globals.state_dir !== undefined) config.state_dir = resolve(globals.state_dir);
  if (globals.audit_log !== undefined) config.audit_log = resolve(globals.audit_log);
  return config;
}
