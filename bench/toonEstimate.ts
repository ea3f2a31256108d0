/**
 * A TOON writer (Token-Oriented Object Notation: indentation for objects, `key[N]{a,b}:` headers
 * with comma-separated rows for arrays of like objects whose values are all primitives,
 * `key[N]: a,b` for primitive arrays, `- ` list items otherwise), written for the result-shaping
 * benchmark only: it prices the other table form a `compact` result could have taken. It follows
 * the format's published rules for quoting and layout closely enough to count tokens; there is no
 * reader, so it is never used to shape a result.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isPrimitive = (v: Json): v is null | boolean | number | string => v === null || typeof v !== "object";

/** A string as TOON writes it: bare when that cannot be read as something else. */
function str(s: string, delimiter = ","): string {
  const needsQuotes =
    s === "" ||
    s !== s.trim() ||
    /^(?:true|false|null)$/.test(s) ||
    /^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/i.test(s) ||
    /[:"\\[\]{}\n\r\t]/.test(s) ||
    s.includes(delimiter) ||
    s.startsWith("-");
  return needsQuotes ? JSON.stringify(s) : s;
}

function primitive(v: null | boolean | number | string): string {
  return typeof v === "string" ? str(v) : String(v);
}

function key(k: string): string {
  return /^[A-Za-z_][A-Za-z0-9_.]*$/.test(k) ? k : JSON.stringify(k);
}

/** Field names when `items` are objects with the same keys and only primitive values. */
function tabular(items: Json[]): string[] | undefined {
  if (items.length === 0) return undefined;
  const first = items[0];
  if (first === null || typeof first !== "object" || Array.isArray(first)) return undefined;
  const fields = Object.keys(first);
  if (fields.length === 0) return undefined;
  for (const item of items) {
    if (item === null || typeof item !== "object" || Array.isArray(item)) return undefined;
    const keys = Object.keys(item);
    if (keys.length !== fields.length || !fields.every((f) => f in item && isPrimitive(item[f]!))) return undefined;
  }
  return fields;
}

function arrayLines(name: string, items: Json[], indent: string, out: string[]): void {
  if (items.every(isPrimitive)) {
    out.push(`${indent}${name}[${items.length}]:${items.length > 0 ? ` ${items.map((v) => primitive(v as null | boolean | number | string)).join(",")}` : ""}`);
    return;
  }
  const fields = tabular(items);
  if (fields !== undefined) {
    out.push(`${indent}${name}[${items.length}]{${fields.map(key).join(",")}}:`);
    for (const item of items)
      out.push(`${indent}  ${fields.map((f) => primitive((item as Record<string, Json>)[f] as null | boolean | number | string)).join(",")}`);
    return;
  }
  out.push(`${indent}${name}[${items.length}]:`);
  for (const item of items) {
    if (isPrimitive(item)) out.push(`${indent}  - ${primitive(item)}`);
    else if (Array.isArray(item)) {
      const inner: string[] = [];
      arrayLines("", item, "", inner);
      out.push(`${indent}  - ${inner[0] ?? ""}`, ...inner.slice(1).map((l) => `${indent}    ${l}`));
    } else {
      const inner: string[] = [];
      objectLines(item, "", inner);
      if (inner.length === 0) out.push(`${indent}  -`);
      else out.push(`${indent}  - ${inner[0]}`, ...inner.slice(1).map((l) => `${indent}    ${l}`));
    }
  }
}

function objectLines(value: { [key: string]: Json }, indent: string, out: string[]): void {
  for (const [k, v] of Object.entries(value)) {
    if (isPrimitive(v)) out.push(`${indent}${key(k)}: ${primitive(v)}`);
    else if (Array.isArray(v)) arrayLines(key(k), v, indent, out);
    else {
      out.push(`${indent}${key(k)}:`);
      objectLines(v, `${indent}  `, out);
    }
  }
}

/** `value` written as TOON. */
export function toToon(value: unknown): string {
  const v = value as Json;
  const out: string[] = [];
  if (isPrimitive(v)) return primitive(v);
  if (Array.isArray(v)) arrayLines("", v, "", out);
  else objectLines(v, "", out);
  return out.join("\n");
}
