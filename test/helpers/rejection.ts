import { expect } from "vitest";
import { AbridgeError } from "../../src/model/errors.js";

/**
 * The error `promise` rejects with, which must be an {@link AbridgeError}; a promise that resolves
 * fails the test, naming the value it resolved with.
 */
export async function rejection(promise: Promise<unknown>): Promise<AbridgeError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(AbridgeError);
  return outcome.error as AbridgeError;
}
