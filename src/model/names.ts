import { createHash } from "node:crypto";
import { AbridgeError, ErrorCode } from "./errors.js";
import { compareStrings } from "./json.js";

/** Longest exposed name: the limit most model APIs enforce on function names. */
export const MAX_TOOL_NAME_LENGTH = 64;

/** Length of the hash suffix given to names that are too long or collide. */
export const NAME_SUFFIX_LENGTH = 6;

/** One tool to be named: where it comes from and whether its server prefixes names. */
export interface NameRequest {
  server: string;
  tool: string;
  /** `false` exposes the tool under its own name (the server's `prefix` setting). */
  prefix: boolean;
  /**
   * The server's position in the config: on a collision the earlier server keeps the name. When
   * absent, servers rank after those with a position, by name.
   */
  order?: number;
}

/** The name a tool is exposed under, with its origin and its `mcp://` URI. */
export interface AssignedName {
  /** Exposed name, matching `^[A-Za-z0-9_-]+$`, at most 64 characters, unique in the set. */
  name: string;
  server: string;
  tool: string;
  uri: string;
  /**
   * Set when the tool lost a collision: the name it asked for, and the tool that kept it (from a
   * server earlier in the config, or of the same server with a name that needed no sanitizing).
   */
  renamed?: { wanted: string; keptBy: { server: string; tool: string } };
}

const UNSAFE = /[^A-Za-z0-9_-]/gu;

/** Replaces every character outside `[A-Za-z0-9_-]` (one per code point) with `_`. */
export function sanitizeName(name: string): string {
  return name.replace(UNSAFE, "_");
}

/**
 * Hex digest of `server \0 tool`. The NUL separator keeps `("a_b", "c")` and `("a", "b_c")`
 * apart, and sha256 gives the same suffix on every machine and every run.
 */
function originHash(server: string, tool: string): string {
  return createHash("sha256").update(`${server}\0${tool}`).digest("hex");
}

function suffixed(base: string, hash: string, hashLength: number): string {
  const suffix = hash.slice(0, hashLength);
  const room = MAX_TOOL_NAME_LENGTH - suffix.length - 1;
  return `${base.slice(0, room)}_${suffix}`;
}

/**
 * Gives every tool its exposed name: `<server><separator><tool>` (or `<tool>` for a server with
 * `prefix = false`), sanitized. A name longer than 64 characters is cut and given a 6-character
 * suffix from a hash of its origin.
 *
 * When several tools would share a name, one keeps it and the others are renamed the same way
 * (suffixed): the tool of the server listed first in the config; within one server, the tool whose
 * name needed no sanitizing, then the first by name. So a server cannot take a name from another
 * listed before it by choosing a tool name that collides (`gh_delete` + `repo` against `gh` +
 * `delete_repo`), two `prefix = false` servers with the same tool both keep serving, and the
 * result depends only on the config and the set of tools, not on the order they arrived in.
 */
export function assignNames(requests: readonly NameRequest[], separator: string): AssignedName[] {
  // Deduplicate exact (server, tool) pairs; a pair always maps to one name.
  const unique = new Map<string, NameRequest>();
  for (const request of requests) {
    const key = `${request.server}\0${request.tool}`;
    if (!unique.has(key)) unique.set(key, request);
  }

  interface Slot {
    request: NameRequest;
    base: string;
    /** Whether the raw name had characters that sanitizing replaced. */
    sanitized: boolean;
    hash: string;
    /** 0 = unsuffixed; otherwise the number of hash characters in the suffix. */
    hashLength: number;
    name: string;
    /** The name before any collision. */
    wanted: string;
    keptBy?: Slot;
  }
  const slots: Slot[] = [...unique.values()].map((request) => {
    const raw = request.prefix ? `${request.server}${separator}${request.tool}` : request.tool;
    const base = sanitizeName(raw);
    const hash = originHash(request.server, request.tool);
    const needsSuffix = base.length === 0 || base.length > MAX_TOOL_NAME_LENGTH;
    const hashLength = needsSuffix ? NAME_SUFFIX_LENGTH : 0;
    const name = needsSuffix ? suffixed(base, hash, hashLength) : base;
    return { request, base, sanitized: base !== raw, hash, hashLength, name, wanted: name };
  });

  // A suffixed name that still collides (a 24-bit hash clash, or a tool literally named like
  // another's suffixed form) gets a longer suffix; the loop ends because suffixes only grow.
  for (;;) {
    const groups = new Map<string, Slot[]>();
    for (const slot of slots) {
      const group = groups.get(slot.name);
      if (group) group.push(slot);
      else groups.set(slot.name, [slot]);
    }
    let changed = false;
    for (const group of groups.values()) {
      if (group.length < 2) continue;
      group.sort(byPrecedence);
      const keeper = group[0]!;
      for (const slot of group.slice(1)) {
        const next = slot.hashLength === 0 ? NAME_SUFFIX_LENGTH : slot.hashLength + 2;
        if (next > 32) {
          throw new AbridgeError(ErrorCode.INTERNAL, `cannot give "${slot.request.server}/${slot.request.tool}" a unique name`);
        }
        slot.hashLength = next;
        slot.name = suffixed(slot.base, slot.hash, next);
        slot.keptBy ??= keeper;
        changed = true;
      }
    }
    if (!changed) break;
  }

  return slots
    .map(
      (slot): AssignedName => ({
        name: slot.name,
        server: slot.request.server,
        tool: slot.request.tool,
        uri: toolUri(slot.request.server, slot.request.tool),
        ...(slot.keptBy !== undefined
          ? { renamed: { wanted: slot.wanted, keptBy: { server: slot.keptBy.request.server, tool: slot.keptBy.request.tool } } }
          : {}),
      }),
    )
    .sort((a, b) => compareStrings(a.server, b.server) || compareStrings(a.tool, b.tool));

  /** Who keeps a contested name: config order, then a name that needed no sanitizing, then by name. */
  function byPrecedence(a: Slot, b: Slot): number {
    const orderA = a.request.order ?? Number.MAX_SAFE_INTEGER;
    const orderB = b.request.order ?? Number.MAX_SAFE_INTEGER;
    return (
      orderA - orderB ||
      compareStrings(a.request.server, b.request.server) ||
      a.hashLength - b.hashLength ||
      Number(a.sanitized) - Number(b.sanitized) ||
      compareStrings(a.request.tool, b.request.tool)
    );
  }
}

const URI_PREFIX = "mcp://";

/** The stable URI of a tool: `mcp://<server>/<tool>`, the tool percent-encoded where needed. */
export function toolUri(server: string, tool: string): string {
  return `${URI_PREFIX}${encodeURIComponent(server)}/${encodeURIComponent(tool)}`;
}

/** Inverse of {@link toolUri}; `undefined` for anything that is not a well-formed tool URI. */
export function parseToolUri(uri: string): { server: string; tool: string } | undefined {
  if (!uri.startsWith(URI_PREFIX)) return undefined;
  const rest = uri.slice(URI_PREFIX.length);
  const slash = rest.indexOf("/");
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  try {
    const server = decodeURIComponent(rest.slice(0, slash));
    const tool = decodeURIComponent(rest.slice(slash + 1));
    return { server, tool };
  } catch {
    // Malformed percent-encoding (URIError): not one of ours.
    return undefined;
  }
}

/**
 * The prefixes clients put before a server's tool names, `S` being the client's name for abridge
 * (never starting or ending with `_`, so `___` cannot be split two ways): `S__` (mcp-hub; it also
 * covers Claude Code's `mcp__S__`), `mcp_S_` (Gemini CLI), and `mcp://S/` or `S/`.
 */
const CLIENT_PREFIXES = [/^(?!_).*[^_]__$/, /^mcp_(?!_).*[^_]_$/, /^(?:mcp:\/\/)?[^/]+\/$/];

/**
 * The exposed names that `name` ends with behind a client's own prefix. Clients show the model
 * our tools under names of their own making: `mcp__abridge__everything_echo` (Claude Code),
 * `abridge__everything_echo` (mcp-hub), `mcp_abridge_everything_echo` (Gemini CLI),
 * `mcp://abridge/everything_echo`; a model then hands that name to `get_schema` or `call_tool`.
 * A known name counts when `name` ends with it and the rest is one of {@link CLIENT_PREFIXES}.
 * The caller uses a single match and reports several as ambiguous: with tools `echo` (of a
 * `prefix = false` server) and `everything_echo`, Gemini's `mcp_abridge_everything_echo` reads
 * either way (its server part may hold `_`).
 */
export function clientPrefixedMatches(name: string, known: Iterable<string>): string[] {
  const matches: string[] = [];
  for (const candidate of known) {
    if (candidate.length === 0 || candidate.length >= name.length || !name.endsWith(candidate)) continue;
    if (isClientPrefix(name.slice(0, name.length - candidate.length))) matches.push(candidate);
  }
  return matches.sort(compareStrings);
}

/** True when `prefix` is one a client puts before a server's tool names (see {@link CLIENT_PREFIXES}). */
export function isClientPrefix(prefix: string): boolean {
  return CLIENT_PREFIXES.some((form) => form.test(prefix));
}
