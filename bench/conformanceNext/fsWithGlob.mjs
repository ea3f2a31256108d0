/**
 * `node:fs` plus a `globSync(pattern, { cwd })` for Node 20 (see fsGlob.mjs). It walks `cwd` and
 * keeps the relative paths the pattern matches: `**` any number of directories, `*` any run of
 * characters within one name, `?` one character. That covers what the conformance suite asks
 * (`**\/checks.json`); Node 22's own is used when present.
 */
import fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs;

function patternRegex(pattern) {
  let source = "";
  for (let i = 0; i < pattern.length; i += 1) {
    const ch = pattern[i];
    if (ch === "*" && pattern[i + 1] === "*") {
      // `**/` matches zero or more whole directories.
      const slash = pattern[i + 2] === "/";
      source += slash ? "(?:[^/]+/)*" : ".*";
      i += slash ? 2 : 1;
    } else if (ch === "*") source += "[^/]*";
    else if (ch === "?") source += "[^/]";
    else source += ch.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

export function globSync(pattern, options = {}) {
  if (typeof fs.globSync === "function") return fs.globSync(pattern, options);
  const cwd = options.cwd ?? process.cwd();
  const patterns = Array.isArray(pattern) ? pattern : [pattern];
  const regexes = patterns.map(patternRegex);
  const found = [];
  const walk = (dir) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(cwd, dir), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const rel = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (regexes.some((r) => r.test(rel))) found.push(rel);
      if (entry.isDirectory()) walk(rel);
    }
  };
  walk("");
  return found;
}
