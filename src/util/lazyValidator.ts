import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv-provider.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";

/**
 * A JSON Schema validator for an SDK `Server` or `Client` whose Ajv instance is made on first use.
 * The SDK makes one with its formats for each `Server` and `Client` (about 1 ms of CPU each), for
 * checks abridge does not ask of it: `elicitInput()` on a server (abridge relays an upstream's
 * elicitation as a plain request) and the output-schema checks of a client's `listTools()` and
 * `callTool()` (abridge sends both as plain requests: a proxy must not validate what it forwards).
 * Each caller keeps one for all its instances: a compiled validator is per schema, so sharing
 * changes no result.
 */
export function lazyValidator(): jsonSchemaValidator {
  let ajv: AjvJsonSchemaValidator | undefined;
  return { getValidator: (schema) => (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema) };
}
