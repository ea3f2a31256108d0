/**
 * `target[key] = value` that also works for a key named `__proto__`: JSON.parse makes it an own
 * key, and plain assignment would instead replace the prototype, hiding the key from validation
 * (it should be reported as an unknown key like any other).
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
