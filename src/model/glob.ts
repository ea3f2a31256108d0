/**
 * Turns a glob (`*` = any run of characters, `?` = exactly one, everything else literal,
 * case-sensitive) into an anchored regular expression. One matcher for every glob abridge reads:
 * the `allow`/`deny` lists of the policy and the `pin` list of the catalog.
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
