import { readdir, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { formatPath, valueAt } from "../../config/formatIssues.js";
import { describeInvalidJson } from "../../config/parseJsonText.js";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import { compareStrings, isObject } from "../../model/json.js";
import type { JsonObject } from "../../model/types.js";
import { readRegularFile } from "../../util/readRegularFile.js";
import { admitTool, withoutMembers, type AdmittedTool } from "../admitTool.js";

/** A manifest larger than this is refused unread: a manifest lists tools, it is not a data file. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

/**
 * One thing wrong in a manifest: rendered `<file>: <field>: <message>`. It says what is wrong and
 * where (file, field, line and column), never what the file holds: a value is named by its kind
 * (`got a number`), so that no byte of a file reaches a log or a status through a problem.
 */
export interface ManifestProblem {
  /** Absolute path of the manifest. */
  file: string;
  /** Field path inside it (`tools[2].name`, `implementation.methods.search`); "" for the whole file. */
  field: string;
  message: string;
}

/** A tool a manifest declares but that is not exposed, and why. */
export interface HiddenTool {
  file: string;
  tool: string;
  /** `mcpExpose`: the manifest keeps it from MCP on purpose; `unmapped`: no method to call. */
  kind: "mcpExpose" | "unmapped";
  reason: string;
}

/** A tool ready to serve: what `tools/list` shows, the JSON-RPC method a call sends, where it came from. */
export interface ManifestTool {
  tool: AdmittedTool;
  method: string;
  file: string;
  /** Its index in the file's `tools`, for field paths. */
  index: number;
}

/** One manifest file as read: its tools (before duplicates across files are settled). */
export interface ParsedManifest {
  id: string;
  tools: ManifestTool[];
  hidden: HiddenTool[];
  /** Tool-level problems (a tool skipped, a mapping of nothing); the rest of the file loaded. */
  problems: ManifestProblem[];
}

/** Everything under a manifests folder. */
export interface ManifestSet {
  /** Exposed tools, one per name, in file order then manifest order. */
  tools: ManifestTool[];
  hidden: HiddenTool[];
  problems: ManifestProblem[];
  /** The manifests that parsed, by file: handed to the next load to stand in for a file an edit broke. */
  parsed: Map<string, ParsedManifest>;
  /** `*.json` files found. */
  files: number;
}

/** Renders a problem as one line. */
export function renderManifestProblem(problem: ManifestProblem): string {
  return problem.field === "" ? `${problem.file}: ${problem.message}` : `${problem.file}: ${problem.field}: ${problem.message}`;
}

const manifestSchema = z.looseObject(
  {
    id: z.string({ error: "expected a non-empty string" }).min(1, { error: "expected a non-empty string" }),
    tools: z.array(z.unknown(), { error: "expected an array of tools" }),
    implementation: z.looseObject(
      { methods: z.record(z.string(), z.unknown(), { error: "expected an object mapping tool names to JSON-RPC methods" }) },
      { error: "expected an object with `methods`" },
    ),
  },
  { error: "expected a manifest object {id, tools, implementation}" },
);

const toolSchema = z.looseObject({
  name: z.string({ error: "expected a non-empty string" }).min(1, { error: "expected a non-empty string" }),
  title: z.string({ error: "expected a string" }).optional(),
  description: z.string({ error: "expected a string" }).optional(),
  inputSchema: z.record(z.string(), z.unknown(), { error: "expected a JSON Schema object" }),
  outputSchema: z.record(z.string(), z.unknown(), { error: "expected a JSON Schema object" }).optional(),
  annotations: z.record(z.string(), z.unknown(), { error: "expected an object" }).optional(),
  mcpExpose: z.boolean({ error: "expected true or false" }).optional(),
});

/** The first issue of a failed parse as `field: expected X, got <kind>`, relative to `at`. */
function issueProblems(file: string, error: z.ZodError, input: unknown, at: PropertyKey[]): ManifestProblem[] {
  return error.issues.map((issue) => ({
    file,
    field: formatPath([...at, ...issue.path]),
    message: `${issue.message}, got ${kindOf(valueAt(input, issue.path))}`,
  }));
}

/** What a JSON value is, without the value: `a string`, `an empty string`, `a number`, `nothing`. */
function kindOf(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (value === "") return "an empty string";
  switch (typeof value) {
    case "string":
      return "a string";
    case "number":
      return "a number";
    case "boolean":
      return "a boolean";
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}

/**
 * Reads one manifest's text. A file that is not JSON or not shaped as a manifest (`id`, `tools`,
 * `implementation.methods`) throws an {@link AbridgeError} (`CONFIG_INVALID`) carrying its
 * problems; a bad tool inside a good file is skipped and reported, the file's other tools load.
 */
export function parseManifest(text: string, file: string): ParsedManifest {
  let value: unknown;
  const json = text.startsWith("\uFEFF") ? text.slice(1) : text;
  try {
    value = JSON.parse(json);
  } catch (err) {
    // Not V8's message: it quotes a slice of the file.
    throw manifestError([{ file, field: "", message: `expected JSON, got ${describeInvalidJson(json)}` }], err);
  }
  const shape = manifestSchema.safeParse(value);
  if (!shape.success) throw manifestError(issueProblems(file, shape.error, value, []));
  const { id, tools, implementation } = shape.data;
  const methods = implementation.methods;
  const problems: ManifestProblem[] = [];
  const hidden: HiddenTool[] = [];
  const out: ManifestTool[] = [];
  const declared = new Set<string>();
  const named = new Set<string>();
  tools.forEach((raw, i) => {
    if (!isObject(raw)) {
      problems.push({ file, field: `tools[${i}]`, message: `expected an object, got ${kindOf(raw)}` });
      return;
    }
    // A mapping for a tool skipped below is not a mapping of nothing: the tool's problem says it.
    if (typeof raw.name === "string") named.add(raw.name);
    // The one admission rule (see admitTool): depth first, then nulls dropped; the manifest's own
    // shape (field types, a non-empty name, mcpExpose) is checked on the normalized form.
    const admission = admitTool(raw);
    if (!admission.ok && admission.problem.normalized === undefined) {
      problems.push({ file, field: `tools[${i}]`, message: admission.problem.message });
      return;
    }
    const normalized = admission.ok ? admission.tool : (admission.problem.normalized as JsonObject);
    const parsed = toolSchema.safeParse(normalized);
    if (!parsed.success) {
      problems.push(...issueProblems(file, parsed.error, normalized, ["tools", i]));
      return;
    }
    if (!admission.ok) {
      // Not reached: the shape above asks for a name and an inputSchema too.
      problems.push({ file, field: formatPath(["tools", i, admission.problem.field]), message: admission.problem.message });
      return;
    }
    const name = parsed.data.name;
    if (declared.has(name)) {
      problems.push({ file, field: `tools[${i}].name`, message: `"${name}" is declared twice in this manifest; the first is kept` });
      return;
    }
    declared.add(name);
    const mcpExpose = parsed.data.mcpExpose;
    const tool = withoutMembers(admission.tool, "mcpExpose");
    const method = Object.hasOwn(methods, name) ? methods[name] : undefined;
    if (mcpExpose === false) {
      hidden.push({ file, tool: name, kind: "mcpExpose", reason: "mcpExpose is false" });
      return;
    }
    if (method === undefined) {
      hidden.push({ file, tool: name, kind: "unmapped", reason: `implementation.methods has no method for "${name}"` });
      return;
    }
    if (typeof method !== "string" || method === "") {
      problems.push({
        file,
        field: formatPath(["implementation", "methods", name]),
        message: `expected the name of a JSON-RPC method, got ${kindOf(method)}; the tool is not exposed`,
      });
      return;
    }
    out.push({ tool, method, file, index: i });
  });
  for (const [name, method] of Object.entries(methods)) {
    if (named.has(name)) continue;
    problems.push({
      file,
      field: formatPath(["implementation", "methods", name]),
      message: `maps ${typeof method === "string" ? "a method" : kindOf(method)} to a tool this manifest does not declare; ignored`,
    });
  }
  return { id, tools: out, hidden, problems };
}

function manifestError(problems: ManifestProblem[], cause?: unknown): AbridgeError {
  return new AbridgeError(ErrorCode.CONFIG_INVALID, problems.map(renderManifestProblem).join("\n"), {
    ...(cause !== undefined ? { cause } : {}),
    details: { problems },
  });
}

/**
 * Every `*.json` below `dir`, sorted, recursively. Names starting with a dot are skipped (editors'
 * lock and swap files: Emacs writes `.#tools.json`); symlinked folders are not followed, so a link
 * loop cannot make the walk endless, while a symlinked file is listed (and read only when it
 * leads to a file inside the folder, see {@link loadManifests}).
 *
 * @throws AbridgeError CONFIG_INVALID when `dir` cannot be read or is not a folder.
 */
export async function findManifestFiles(dir: string, field: string): Promise<string[]> {
  let info;
  try {
    info = await stat(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${field}: cannot read the manifests folder ${dir}${code ? ` (${code})` : ""}`, {
      cause: err,
      details: { field, dir },
    });
  }
  if (!info.isDirectory()) throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${field}: ${dir} is not a folder`, { details: { field, dir } });
  const files: string[] = [];
  const walk = async (folder: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch {
      // A subfolder removed or closed to us while walking: what it held is simply not there.
      return;
    }
    for (const entry of entries.sort((a, b) => compareStrings(a.name, b.name))) {
      if (entry.name.startsWith(".")) continue;
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.name.endsWith(".json") && (entry.isFile() || (entry.isSymbolicLink() && (await isFile(full))))) files.push(full);
    }
  };
  await walk(dir);
  return files;
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/**
 * Reads one file found under the folder whose real path is `root`. A symbolic link is followed
 * only to a file inside that folder: one that leads anywhere else (`env.json ->
 * /proc/self/environ`) is refused unread, naming the link. The file must be a regular file of at
 * most {@link MAX_MANIFEST_BYTES} (see {@link readRegularFile}).
 */
async function readManifestFile(file: string, root: string): Promise<ParsedManifest> {
  let real: string;
  try {
    real = await realpath(file);
  } catch (err) {
    throw manifestError([{ file, field: "", message: `cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})` }], err);
  }
  if (!isInside(real, root)) {
    throw manifestError([{ file, field: "", message: `a symbolic link to ${real}, outside the manifests folder ${root}; not read` }]);
  }
  let text: string;
  try {
    // The resolved path, not following a link there: a link swapped in since is not read.
    text = await readRegularFile(real, MAX_MANIFEST_BYTES, { noFollow: true });
  } catch (err) {
    throw manifestError([{ file, field: "", message: messageOf(err) }], err);
  }
  return parseManifest(text, file);
}

/** True when `file` (a real path) is below the folder `root` (a real path). */
function isInside(file: string, root: string): boolean {
  return file.startsWith(root.endsWith(path.sep) ? root : `${root}${path.sep}`);
}

/**
 * Loads every manifest under `dir`. A file that fails as a whole is reported and skipped, and when
 * `previous` (the last load) parsed it, its previous tools stand in until it is fixed: an edit
 * caught half-written must not take a tool away from the model. A tool name declared by two files
 * goes to the first in path order; the later declaration is reported and skipped. A symbolic link
 * to a file outside the folder, a file that is not a regular file and one over
 * {@link MAX_MANIFEST_BYTES} are reported unread.
 *
 * @throws AbridgeError CONFIG_INVALID when the folder itself cannot be read (`field` names the config field).
 */
export async function loadManifests(dir: string, field: string, previous: ReadonlyMap<string, ParsedManifest> = new Map()): Promise<ManifestSet> {
  const files = await findManifestFiles(dir, field);
  let root: string;
  try {
    root = await realpath(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${field}: cannot read the manifests folder ${dir}${code ? ` (${code})` : ""}`, {
      cause: err,
      details: { field, dir },
    });
  }
  const parsed = new Map<string, ParsedManifest>();
  const problems: ManifestProblem[] = [];
  for (const file of files) {
    try {
      parsed.set(file, await readManifestFile(file, root));
    } catch (err) {
      const own =
        err instanceof AbridgeError && Array.isArray(err.details?.problems)
          ? (err.details.problems as ManifestProblem[])
          : [{ file, field: "", message: String(err) }];
      const kept = previous.get(file);
      if (kept !== undefined) {
        parsed.set(file, kept);
        own.push({ file, field: "", message: `its previous ${kept.tools.length} tool(s) are kept until it is fixed` });
      }
      problems.push(...own);
    }
  }
  const tools: ManifestTool[] = [];
  const hidden: HiddenTool[] = [];
  const owner = new Map<string, string>();
  for (const [file, manifest] of parsed) {
    problems.push(...manifest.problems);
    hidden.push(...manifest.hidden);
    for (const entry of manifest.tools) {
      const first = owner.get(entry.tool.name);
      if (first !== undefined) {
        problems.push({
          file,
          field: `tools[${entry.index}].name`,
          message: `"${entry.tool.name}" is already declared by ${first}; this declaration is skipped`,
        });
        continue;
      }
      owner.set(entry.tool.name, file);
      tools.push(entry);
    }
  }
  return { tools, hidden, problems, parsed, files: files.length };
}
