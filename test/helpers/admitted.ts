import { admitTool, type AdmittedTool } from "../../src/upstream/admitTool.js";

/**
 * `tool` admitted as an upstream admits it (see admitTool): what a test hands the catalog, the
 * hasher or a renderer. Throws, naming the problem, for a tool admission refuses.
 */
export function admitted(tool: unknown): AdmittedTool {
  const admission = admitTool(tool);
  if (!admission.ok) throw new Error(`tool not admitted: ${admission.problem.field || "tool"}: ${admission.problem.message}`);
  return admission.tool;
}

/** `exposed` with its tool admitted (see {@link admitted}). */
export function admittedExposed<T extends { tool: unknown }>(exposed: T): Omit<T, "tool"> & { tool: AdmittedTool } {
  return { ...exposed, tool: admitted(exposed.tool) };
}
