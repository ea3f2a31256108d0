/**
 * `${VAR}` expansion of config strings.
 *
 * Syntax (a deliberate subset of POSIX shell parameter expansion, so what users know from
 * docker-compose and `.env` files works):
 * - `${NAME}`: the variable's value; an unset variable is an error (set but empty is fine).
 * - `${NAME:-default}`: the default when NAME is unset or empty; the default may itself hold
 *   references (`${A:-${B}}`).
 * - `${env:NAME}`: the same as `${NAME}`; VS Code's spelling, accepted so its mcp.json files load.
 * - `$${` is a literal `${`. A `$` not followed by `{` is kept as it is (no bare `$NAME` form: args
 *   such as `$1` or prices in descriptions must survive untouched).
 */

/** Variables to expand from, typically `process.env` passed in by the caller. */
export type EnvMap = Record<string, string | undefined>;

/** One reference that could not be expanded. */
export interface ExpandProblem {
  /** The variable's name, when the reference was well formed. */
  variable?: string;
  /** Why, without the expanded value of anything: e.g. `environment variable "X" is not set`. */
  message: string;
}

/** What {@link expandVars} made of one string. */
export interface ExpandResult {
  /** The expanded text (references that failed are left as written). */
  value: string;
  /** Every value substituted for a reference, for callers that must treat them as secrets. */
  substituted: string[];
  problems: ExpandProblem[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Expands `${VAR}`, `${VAR:-default}`, `${env:VAR}` and the `$${` escape in `text` from `env`. */
export function expandVars(text: string, env: EnvMap): ExpandResult {
  const result: ExpandResult = { value: "", substituted: [], problems: [] };
  result.value = expandInto(text, env, result);
  return result;
}

/** True when `text` holds anything {@link expandVars} would change. */
export function hasVarSyntax(text: string): boolean {
  return text.includes("${");
}

function expandInto(text: string, env: EnvMap, result: ExpandResult): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf("$", i);
    if (dollar === -1) {
      out += text.slice(i);
      break;
    }
    out += text.slice(i, dollar);
    if (text.startsWith("$${", dollar)) {
      out += "${";
      i = dollar + 3;
      continue;
    }
    if (text[dollar + 1] !== "{") {
      out += "$";
      i = dollar + 1;
      continue;
    }
    const close = findClose(text, dollar + 2);
    if (close === -1) {
      result.problems.push({ message: `unterminated variable reference "${text.slice(dollar)}"` });
      out += text.slice(dollar);
      break;
    }
    const inner = text.slice(dollar + 2, close);
    out += expandReference(inner, env, result);
    i = close + 1;
  }
  return out;
}

/** Index of the `}` closing a reference whose body starts at `from`, counting nested `${`. */
function findClose(text: string, from: number): number {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    if (text.startsWith("$${", i)) {
      i += 2;
    } else if (text.startsWith("${", i)) {
      depth++;
      i++;
    } else if (text[i] === "}") {
      if (depth === 0) return i;
      depth--;
    }
  }
  return -1;
}

function expandReference(inner: string, env: EnvMap, result: ExpandResult): string {
  const sep = inner.indexOf(":-");
  let name = sep === -1 ? inner : inner.slice(0, sep);
  const fallback = sep === -1 ? undefined : inner.slice(sep + 2);
  if (name.startsWith("env:")) name = name.slice(4);
  if (name.startsWith("input:")) {
    // VS Code prompts the user for `${input:id}`; a bridge running unattended cannot.
    result.problems.push({
      message: `"\${${inner}}" is a VS Code input prompt, which abridge cannot ask for; use \${ENV_VAR} instead`,
    });
    return `\${${inner}}`;
  }
  if (!NAME.test(name)) {
    result.problems.push({
      message: `malformed variable reference "\${${inner}}" (expected \${NAME} or \${NAME:-default})`,
    });
    return `\${${inner}}`;
  }
  const value = env[name];
  if (fallback !== undefined) {
    if (value !== undefined && value !== "") {
      result.substituted.push(value);
      return value;
    }
    // The default is expanded too; only what came from the environment counts as substituted,
    // a literal default is visible in the file anyway.
    return expandInto(fallback, env, result);
  }
  if (value === undefined) {
    result.problems.push({
      variable: name,
      message: `environment variable "${name}" is not set (write \${${name}:-default} to give a default)`,
    });
    return `\${${inner}}`;
  }
  result.substituted.push(value);
  return value;
}
