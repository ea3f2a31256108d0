import { z } from "zod";
import { requestIdSchema } from "./requests.js";

/** The `hello` exchange a connection may open with, before any token (see daemonProof.ts). */

/**
 * A nonce of the `hello` exchange: 16 to 128 base64url characters (the bundled client and the
 * daemon send 43: 32 random bytes).
 */
export const nonceSchema = z.string().regex(/^[A-Za-z0-9_-]{16,128}$/);

/**
 * The line a client may send first on a connection, before any token: a fresh random nonce.
 * The daemon answers with a proof that it holds the lockfile's token (see daemonProof.ts), so the
 * client can check whom it talks to before the token leaves it. Only a connection's first line
 * may be a `hello`; the daemon answers one per connection.
 */
export const helloRequestSchema = z.strictObject({ op: z.literal("hello"), nonce: nonceSchema, id: requestIdSchema.optional() });
/** A `hello` request. */
export type HelloRequest = z.infer<typeof helloRequestSchema>;

/** The daemon's answer to `hello`: its own fresh nonce and the proof over both nonces and its address. */
export const helloAnswerSchema = z.object({
  id: requestIdSchema.optional(),
  ok: z.literal(true),
  nonce: nonceSchema,
  /** base64url HMAC-SHA256 (43 characters); see daemonProof.ts. */
  proof: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
});
/** The daemon's answer to `hello`. */
export type HelloAnswer = z.infer<typeof helloAnswerSchema>;
