/** Decides whether a tool of one server is exposed and may be called. */
export type ToolFilter = (tool: string) => boolean;

/**
 * Turns a glob (`*` = any run of characters, `?` = exactly one, everything else literal,
 * case-sensitive) into an anchored regular expression.
 */
export function globToRegExp(glob: string): RegExp {
  let source = "";
  for (const char of glob) {
    if (char === "*") source += ".*";
    else if (char === "?") source += ".";
    // Syntax characters only: under the `u` flag an escaped `-` is a syntax error.
    else source += char.replace(/[.+^${}()|[\]\\/]/g, "\\$&");
  }
  // `s` so that `*` also spans a newline inside a (strange) tool name; `u` so `?` is a code point.
  return new RegExp(`^${source}$`, "su");
}

/**
 * Builds the filter of a server from its `allow` and `deny` globs: a tool passes when it matches
 * some `allow` glob (or `allow` is absent) and no `deny` glob. Deny wins over allow.
 */
export function createToolFilter(allow: readonly string[] | undefined, deny: readonly string[]): ToolFilter {
  const allowed = allow?.map(globToRegExp);
  const denied = deny.map(globToRegExp);
  return (tool) => {
    if (denied.some((re) => re.test(tool))) return false;
    return allowed === undefined || allowed.some((re) => re.test(tool));
  };
}
