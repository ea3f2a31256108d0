import { readFileSync } from "node:fs";
import { AbridgeError, ErrorCode } from "../model/errors.js";

/** A prompt file: its instructions and the id recorded in every cache entry it produced. */
export interface PromptTemplate {
  /** `id` from the front matter, e.g. `summarize-tool`. */
  id: string;
  /** `version` from the front matter. */
  version: string;
  /** `<id>@<version>`, e.g. `summarize-tool@1`: the entry's `prompt` field. */
  promptId: string;
  /** The instructions after the front matter. */
  text: string;
}

/**
 * Parses a prompt file: YAML-ish front matter (`key: value` lines between `---` lines) with `id`
 * and `version`, then the instructions. Only flat keys are needed, so no YAML parser is pulled in.
 */
export function parsePrompt(source: string, origin = "<prompt>"): PromptTemplate {
  const match = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$/.exec(source);
  if (!match) {
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${origin}: expected front matter between --- lines, got none`);
  }
  const fields = new Map<string, string>();
  for (const line of (match[1] ?? "").split(/\r?\n/)) {
    const field = /^\s*([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$/.exec(line);
    if (field?.[1] !== undefined) fields.set(field[1], (field[2] ?? "").replace(/^(["'])(.*)\1$/, "$2"));
  }
  const id = fields.get("id");
  const version = fields.get("version");
  if (!id || !version) {
    throw new AbridgeError(
      ErrorCode.CONFIG_INVALID,
      `${origin}: front matter needs id and version, got ${id ? "" : "no id"}${!id && !version ? " and " : ""}${version ? "" : "no version"}`,
    );
  }
  const text = (match[2] ?? "").trim();
  if (!text) throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${origin}: the prompt has no instructions after the front matter`);
  return { id, version, promptId: `${id}@${version}`, text };
}

/** Reads and parses a prompt file (once, at start-up; hence synchronous). */
export function loadPrompt(filePath: string): PromptTemplate {
  let source: string;
  try {
    source = readFileSync(filePath, "utf8");
  } catch (err) {
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `cannot read prompt file ${filePath}`, { cause: err });
  }
  return parsePrompt(source, filePath);
}
