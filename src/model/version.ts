import { readFileSync } from "node:fs";

/**
 * abridge's version, read from package.json two folders up from `src/model/` or `dist/model/` so it can never drift from
 * the published package.
 */
export const VERSION: string = (() => {
  const raw = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  return (JSON.parse(raw) as { version: string }).version;
})();
