/**
 * Result shapes of tools that declare no `outputSchema`, learnt from their calls: the value a
 * program received from a successful call reduced to types (objects to their keys, arrays to an element type, scalars to
 * their kind), kept per `server:tool:hash`, widened by later results that differ, and bounded in
 * depth, width and size, so the code view can declare what such a tool returns once it has been
 * called, marked as observed rather than declared.
 */
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { isObject } from "../../model/json.js";

/**
 * The types a value was seen to take, at most one entry per JSON kind. `{}` (no kind) is the element
 * type of arrays that were only ever seen empty.
 */
export interface ObservedShape {
  /** Something was seen here beyond the bounds: any value. The other members are then absent. */
  unknown?: true;
  string?: true;
  number?: true;
  boolean?: true;
  null?: true;
  /** The shape of the elements of the arrays seen here. */
  array?: ObservedShape;
  object?: ObservedObject;
}

/** The objects seen at one place. */
export interface ObservedObject {
  /** Keys in the order first seen. */
  keys: ObservedKey[];
  /** Some object had keys beyond {@link OBSERVED_BOUNDS}' `keys`: others may come. */
  more?: true;
}

/** One key of an {@link ObservedObject}. */
export interface ObservedKey {
  name: string;
  shape: ObservedShape;
  /** Some object seen here lacked it. */
  optional?: true;
}

/** How far inference and widening go. */
export const OBSERVED_BOUNDS = {
  /** Levels of arrays and objects described; deeper values are `unknown`. */
  depth: 4,
  /** Keys kept per object, in first-seen order; past them the object is marked open. */
  keys: 32,
  /** Elements of an array looked at (the first ones). */
  elements: 16,
  /** Shape nodes per tool; nodes past it (depth first, in key order) are `unknown`. */
  nodes: 256,
} as const;

const UNKNOWN: ObservedShape = Object.freeze({ unknown: true }) as ObservedShape;

/** The shape of one JSON value, within {@link OBSERVED_BOUNDS}. */
export function inferShape(value: unknown): ObservedShape {
  return bound(infer(value, 0));
}

function infer(value: unknown, depth: number): ObservedShape {
  if (value === null) return { null: true };
  switch (typeof value) {
    case "string":
      return { string: true };
    case "number":
      return { number: true };
    case "boolean":
      return { boolean: true };
    case "object":
      break;
    default:
      return UNKNOWN;
  }
  if (depth >= OBSERVED_BOUNDS.depth) return UNKNOWN;
  if (Array.isArray(value)) {
    let items: ObservedShape = {};
    const count = Math.min(value.length, OBSERVED_BOUNDS.elements);
    for (let i = 0; i < count; i++) items = merge(items, infer(value[i], depth + 1));
    return { array: items };
  }
  const names = Object.keys(value);
  const keys: ObservedKey[] = names.slice(0, OBSERVED_BOUNDS.keys).map((name) => ({ name, shape: infer((value as Record<string, unknown>)[name], depth + 1) }));
  return { object: names.length > OBSERVED_BOUNDS.keys ? { keys, more: true } : { keys } };
}

/** The shape that takes every value `a` or `b` takes, within {@link OBSERVED_BOUNDS}. */
export function widenShape(a: ObservedShape, b: ObservedShape): ObservedShape {
  return bound(merge(a, b));
}

function merge(a: ObservedShape, b: ObservedShape): ObservedShape {
  if (a.unknown === true || b.unknown === true) return UNKNOWN;
  const out: ObservedShape = {};
  if (a.string === true || b.string === true) out.string = true;
  if (a.number === true || b.number === true) out.number = true;
  if (a.boolean === true || b.boolean === true) out.boolean = true;
  if (a.null === true || b.null === true) out.null = true;
  if (a.array !== undefined || b.array !== undefined)
    out.array = a.array === undefined ? (b.array as ObservedShape) : b.array === undefined ? a.array : merge(a.array, b.array);
  if (a.object !== undefined || b.object !== undefined) {
    out.object = a.object === undefined ? (b.object as ObservedObject) : b.object === undefined ? a.object : mergeObjects(a.object, b.object);
  }
  return out;
}

function mergeObjects(a: ObservedObject, b: ObservedObject): ObservedObject {
  const other = new Map(b.keys.map((k) => [k.name, k]));
  const keys: ObservedKey[] = a.keys.map((k) => {
    const match = other.get(k.name);
    if (match === undefined) return { name: k.name, shape: k.shape, optional: true };
    const key: ObservedKey = { name: k.name, shape: merge(k.shape, match.shape) };
    if (k.optional === true || match.optional === true) key.optional = true;
    return key;
  });
  const own = new Set(a.keys.map((k) => k.name));
  for (const k of b.keys) if (!own.has(k.name)) keys.push({ name: k.name, shape: k.shape, optional: true });
  const out: ObservedObject = { keys: keys.slice(0, OBSERVED_BOUNDS.keys) };
  if (a.more === true || b.more === true || keys.length > OBSERVED_BOUNDS.keys) out.more = true;
  return out;
}

/** `shape` with at most {@link OBSERVED_BOUNDS}' `nodes` nodes, the ones past it `unknown`. */
function bound(shape: ObservedShape): ObservedShape {
  let budget: number = OBSERVED_BOUNDS.nodes;
  const walk = (node: ObservedShape): ObservedShape => {
    if (budget <= 0) return UNKNOWN;
    budget--;
    if (node.unknown === true) return UNKNOWN;
    const out: ObservedShape = {};
    if (node.string === true) out.string = true;
    if (node.number === true) out.number = true;
    if (node.boolean === true) out.boolean = true;
    if (node.null === true) out.null = true;
    if (node.array !== undefined) out.array = walk(node.array);
    if (node.object !== undefined) {
      const keys = node.object.keys.map((k) => {
        const key: ObservedKey = { name: k.name, shape: walk(k.shape) };
        if (k.optional === true) key.optional = true;
        return key;
      });
      out.object = node.object.more === true ? { keys, more: true } : { keys };
    }
    return out;
  };
  return walk(shape);
}

/** Levels of arrays and objects in `shape` (0 for a scalar). */
export function shapeDepth(shape: ObservedShape): number {
  const below = [shape.array === undefined ? -1 : shapeDepth(shape.array), ...(shape.object?.keys ?? []).map((k) => shapeDepth(k.shape))];
  return shape.array !== undefined || shape.object !== undefined ? 1 + Math.max(0, ...below) : 0;
}

const PROPERTY_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A property name as a type literal writes it: bare when it is an identifier, quoted otherwise. */
export function propertyKey(name: string): string {
  return PROPERTY_NAME.test(name) ? name : JSON.stringify(name);
}

/**
 * The TypeScript type of `shape`: `{ id: number; tags: string[]; parent?: { id: number } | null }`.
 * A place seen beyond the bounds is `unknown`, an object that had more keys than kept takes any
 * other key too (`[key: string]: unknown`), arrays only seen empty are `unknown[]`.
 */
export function shapeType(shape: ObservedShape): string {
  if (shape.unknown === true) return "unknown";
  const parts: string[] = [];
  if (shape.string === true) parts.push("string");
  if (shape.number === true) parts.push("number");
  if (shape.boolean === true) parts.push("boolean");
  if (shape.object !== undefined) {
    const members = shape.object.keys.map((k) => `${propertyKey(k.name)}${k.optional === true ? "?" : ""}: ${shapeType(k.shape)}`);
    if (shape.object.more === true || shape.object.keys.length === 0) members.push("[key: string]: unknown");
    parts.push(`{ ${members.join("; ")} }`);
  }
  if (shape.array !== undefined) {
    const items = shapeType(shape.array);
    parts.push(kinds(shape.array) > 1 ? `(${items})[]` : `${items}[]`);
  }
  if (shape.null === true) parts.push("null");
  return parts.length === 0 ? "unknown" : parts.join(" | ");
}

/** How many kinds `shape` names (a type of several is a union). */
function kinds(shape: ObservedShape): number {
  if (shape.unknown === true) return 1;
  return [shape.string, shape.number, shape.boolean, shape.null, shape.array, shape.object].filter((k) => k !== undefined).length;
}

/** Default bound of an {@link ObservedShapes} store, in tools. */
export const DEFAULT_OBSERVED_TOOLS = 4_096;

/** The serialized form's version; {@link ObservedShapes.deserialize} refuses another. */
const FORMAT_VERSION = 1;

/**
 * Observed result shapes keyed by `server:tool:hash`: a changed schema is a new key, so its shapes
 * start afresh. Holds at most `limit` tools, the least recently observed or read dropped first.
 */
export class ObservedShapes {
  private readonly shapes = new Map<string, ObservedShape>();

  constructor(readonly limit: number = DEFAULT_OBSERVED_TOOLS) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`ObservedShapes: limit must be a positive integer, got ${limit}`);
  }

  /**
   * Records `value`, what a program received from a successful call of the tool `key` (the
   * result's value as the program runtime hands it over: `structuredContent`, else the text parsed
   * as JSON, else the text): its shape, widened with what was seen before. True when the stored
   * shape changed.
   */
  observe(key: string, value: unknown): boolean {
    const seen = inferShape(value);
    const before = this.shapes.get(key);
    const next = before === undefined ? seen : widenShape(before, seen);
    this.touch(key, next);
    return before === undefined || JSON.stringify(before) !== JSON.stringify(next);
  }

  /** The shape observed for `key`, or undefined when none was. */
  get(key: string): ObservedShape | undefined {
    const shape = this.shapes.get(key);
    if (shape !== undefined) this.touch(key, shape);
    return shape;
  }

  /** Tools with a shape. */
  get size(): number {
    return this.shapes.size;
  }

  /** Every entry as JSON text, least recently used first, for {@link deserialize}. */
  serialize(): string {
    return JSON.stringify({ version: FORMAT_VERSION, shapes: [...this.shapes] });
  }

  /**
   * A store holding what `text` ({@link serialize}'s form) holds, within `limit` (the most recent
   * entries kept). An entry whose shape is not a valid shape is left out, and every shape is bounded
   * again, so a hand-edited or older file cannot bring in more than a store would keep.
   *
   * @throws AbridgeError INPUT_INVALID when `text` is not JSON of that form and version.
   */
  static deserialize(text: string, limit: number = DEFAULT_OBSERVED_TOOLS): ObservedShapes {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (err) {
      throw new AbridgeError(ErrorCode.INPUT_INVALID, "observed shapes: not JSON", { cause: err });
    }
    if (!isObject(data) || data.version !== FORMAT_VERSION || !Array.isArray(data.shapes)) {
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `observed shapes: expected {"version": ${FORMAT_VERSION}, "shapes": [...]}`);
    }
    const store = new ObservedShapes(limit);
    for (const entry of data.shapes.slice(-limit)) {
      if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== "string") continue;
      const shape = readShape(entry[1], 0);
      if (shape !== undefined) store.touch(entry[0], bound(shape));
    }
    return store;
  }

  private touch(key: string, shape: ObservedShape): void {
    this.shapes.delete(key);
    this.shapes.set(key, shape);
    if (this.shapes.size > this.limit) {
      const oldest = this.shapes.keys().next().value as string;
      this.shapes.delete(oldest);
    }
  }
}

/** `value` as a shape when it is one within the depth bound; undefined otherwise. */
function readShape(value: unknown, depth: number): ObservedShape | undefined {
  if (!isObject(value) || depth > OBSERVED_BOUNDS.depth) return undefined;
  const out: ObservedShape = {};
  for (const [name, member] of Object.entries(value)) {
    switch (name) {
      case "unknown":
      case "string":
      case "number":
      case "boolean":
      case "null":
        if (member !== true) return undefined;
        out[name] = true;
        break;
      case "array": {
        const items = readShape(member, depth + 1);
        if (items === undefined) return undefined;
        out.array = items;
        break;
      }
      case "object": {
        if (!isObject(member) || !Array.isArray(member.keys) || (member.more !== undefined && member.more !== true)) return undefined;
        const keys: ObservedKey[] = [];
        const names = new Set<string>();
        for (const k of member.keys.slice(0, OBSERVED_BOUNDS.keys)) {
          if (!isObject(k) || typeof k.name !== "string" || names.has(k.name) || (k.optional !== undefined && k.optional !== true)) return undefined;
          const shape = readShape(k.shape, depth + 1);
          if (shape === undefined) return undefined;
          names.add(k.name);
          keys.push(k.optional === true ? { name: k.name, shape, optional: true } : { name: k.name, shape });
        }
        out.object = member.more === true || member.keys.length > OBSERVED_BOUNDS.keys ? { keys, more: true } : { keys };
        break;
      }
      default:
        return undefined;
    }
  }
  return out.unknown === true ? UNKNOWN : out;
}
