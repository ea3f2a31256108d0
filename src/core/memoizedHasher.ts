import type { ToolHasher } from "../catalog/toolHash.js";
import type { RawTool } from "../model/types.js";

/**
 * `hasher` remembering each tool object's hash. A discovery re-hashes every tool of every server
 * (canonical JSON of the schema, then xxhash), and while upstreams start each one that becomes
 * ready triggers a discovery of all tools listed so far: 50 servers of 7 tools cost about 9,000
 * hashes instead of 350. The pool hands out the same tool objects until a server lists again,
 * and nothing mutates a listed tool, so an object's hash cannot change; a re-listed tool is a new
 * object and is hashed afresh. Keyed weakly: tools a re-list replaced are not kept alive.
 */
export function memoizedHasher(hasher: ToolHasher): ToolHasher {
  const hashes = new WeakMap<RawTool, string>();
  return {
    hash(tool) {
      let hash = hashes.get(tool);
      if (hash === undefined) {
        hash = hasher.hash(tool);
        hashes.set(tool, hash);
      }
      return hash;
    },
    hashText: (text) => hasher.hashText(text),
  };
}
