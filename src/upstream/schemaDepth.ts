import { MAX_JSON_DEPTH } from "../model/jsonDepth.js";
import type { JsonObject } from "../model/types.js";

/**
 * How deep a tool may nest, counted in JSON levels (an object or array inside another is one level
 * down; `{"properties": {"a": {...}}}` is two levels per schema level). Real schemas stay within a
 * few dozen; a tool thousands of levels deep exists only to overflow the stack of whatever walks it
 * recursively (canonical JSON, the renderer, argument validation). Every recursive walk of a schema
 * stops here, and a tool past it is quarantined where tools enter (see {@link schemaTooDeep}). The
 * same bound as a request body of `serve --http` ({@link MAX_JSON_DEPTH}).
 */
export const MAX_SCHEMA_DEPTH = MAX_JSON_DEPTH;

/**
 * True when `value` nests more than `limit` JSON levels. Iterative (an explicit stack), so it is
 * safe on any depth, and it stops at the first path that goes too deep.
 */
export function deeperThan(value: unknown, limit: number): boolean {
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 0 }];
  // The deepest level each object was walked at: an object shared by a library caller's value (JSON
  // off the wire shares nothing) is walked again only when met deeper, so the work stays bounded by
  // objects x limit, and a cycle ends by going past the limit.
  const walkedAt = new Map<object, number>();
  while (stack.length > 0) {
    const { node, depth } = stack.pop() as { node: unknown; depth: number };
    if (typeof node !== "object" || node === null) continue;
    if (depth >= limit) return true;
    const before = walkedAt.get(node);
    if (before !== undefined && before >= depth) continue;
    walkedAt.set(node, depth);
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push({ node: child, depth: depth + 1 });
    }
  }
  return false;
}

/**
 * Why `tool` cannot be served, or undefined when it can: a member (the input or output schema,
 * annotations, anything else) nests deeper than {@link MAX_SCHEMA_DEPTH}. Checked before anything
 * else reads the tool, because every later reader would walk it recursively.
 */
export function schemaTooDeep(tool: JsonObject): string | undefined {
  if (!deeperThan(tool, MAX_SCHEMA_DEPTH)) return undefined;
  return `its definition nests deeper than ${MAX_SCHEMA_DEPTH} levels`;
}

/**
 * How many JSON levels `value` nests: 0 for a scalar, 1 for `{}` or `[1]`, 2 for `{"a": {}}`, the
 * same count {@link deeperThan} compares with its limit (`deeperThan(v, n)` is `nestingDepth(v) > n`
 * for a value without cycles); `"cycle"` when an object contains itself. Iterative, so safe on any
 * depth; each object is walked once, so a library caller's shared objects cost nothing more.
 */
export function nestingDepth(value: unknown): number | "cycle" {
  if (typeof value !== "object" || value === null) return 0;
  interface Frame {
    node: object;
    children: unknown[];
    next: number;
    deepest: number;
  }
  const frame = (node: object): Frame => ({ node, children: Array.isArray(node) ? node : Object.values(node), next: 0, deepest: 0 });
  const depthOf = new Map<object, number>();
  const onPath = new Set<object>([value]);
  const stack: Frame[] = [frame(value)];
  for (;;) {
    const top = stack[stack.length - 1]!;
    if (top.next < top.children.length) {
      const child = top.children[top.next];
      top.next += 1;
      if (typeof child !== "object" || child === null) continue;
      const known = depthOf.get(child);
      if (known !== undefined) {
        top.deepest = Math.max(top.deepest, known);
        continue;
      }
      if (onPath.has(child)) return "cycle";
      onPath.add(child);
      stack.push(frame(child));
      continue;
    }
    stack.pop();
    onPath.delete(top.node);
    const depth = top.deepest + 1;
    depthOf.set(top.node, depth);
    const parent = stack[stack.length - 1];
    if (parent === undefined) return depth;
    parent.deepest = Math.max(parent.deepest, depth);
  }
}
