import { configJsonSchema } from "./configJsonSchema.js";
import type { JsonSchemaNode } from "./configJsonSchema.js";
import { DEFAULT_MAX_OUTPUT_BYTES } from "./schema.js";
import { DEFAULT_RESULT_FORMAT } from "../result/resultFormat.js";

/** Policy fields: a server inherits the top-level value, which has these built-in defaults. */
const POLICY_DEFAULTS: Record<string, unknown> = {
  read_only: false,
  destructive: "allow",
  sandbox: "none",
  max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
  spill: false,
  result_format: DEFAULT_RESULT_FORMAT,
};

/** Escapes what would break a markdown table cell. */
function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

function typeOf(node: JsonSchemaNode): string {
  if (node.enum !== undefined) return node.enum.map((v) => JSON.stringify(v)).join(" | ");
  switch (node.type) {
    case "integer":
    case "number": {
      const max = node.maximum !== undefined && node.maximum < Number.MAX_SAFE_INTEGER ? node.maximum : undefined;
      const lower = node.exclusiveMinimum !== undefined ? `> ${node.exclusiveMinimum}` : node.minimum !== undefined ? `>= ${node.minimum}` : "";
      if (node.minimum !== undefined && max !== undefined) return `${node.type} ${node.minimum}-${max}`;
      return [node.type, lower, max !== undefined ? `<= ${max}` : ""].filter(Boolean).join(" ");
    }
    case "string":
      if (node.format === "uri") return "URL (http/https)";
      if (node.pattern !== undefined) return `string /${node.pattern}/`;
      return "string";
    case "array":
      return `${node.items?.type ?? "value"}[]`;
    case "object": {
      const values = typeof node.additionalProperties === "object" ? node.additionalProperties.type : undefined;
      return values !== undefined ? `table of ${values}` : "table";
    }
    default:
      return node.type ?? "any";
  }
}

function defaultOf(node: JsonSchemaNode, key: string, inServer: boolean): string {
  if (inServer && key in POLICY_DEFAULTS) return "top-level value";
  if (!inServer && key in POLICY_DEFAULTS) return `\`${JSON.stringify(POLICY_DEFAULTS[key])}\``;
  if (node.default === undefined) return "";
  return `\`${JSON.stringify(node.default)}\``;
}

/**
 * The config reference as a markdown table (field, type, default, description), generated from the
 * zod schema's `.describe()` texts so docs/configuration.md cannot drift from what is validated.
 */
export function configReference(): string {
  const root = configJsonSchema();
  const rows: string[] = ["| Field | Type | Default | Description |", "|---|---|---|---|"];
  const add = (prefix: string, node: JsonSchemaNode, inServer: boolean): void => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      if (key === "summary" || key === "code" || key === "servers") continue;
      const field = `${prefix}${key}`;
      let description = child.description ?? "";
      if (inServer && key in POLICY_DEFAULTS) description += " (inherits the top-level value)";
      rows.push(`| \`${cell(field)}\` | ${cell(typeOf(child))} | ${cell(defaultOf(child, key, inServer))} | ${cell(description)} |`);
    }
  };
  add("", root, false);
  const summary = root.properties?.["summary"];
  if (summary !== undefined) add("summary.", summary, false);
  const code = root.properties?.["code"];
  if (code !== undefined) add("code.", code, false);
  const servers = root.properties?.["servers"];
  const server = servers !== undefined && typeof servers.additionalProperties === "object" ? servers.additionalProperties : undefined;
  if (server !== undefined) add("servers.<name>.", server, true);
  return `${rows.join("\n")}\n`;
}
