/** The key prefix of abridge's summary cache in a Redis database, unless told otherwise. */
export const DEFAULT_REDIS_PREFIX = "abridge";

/**
 * Where the summary cache lives in one Redis database:
 * - `<prefix>:summaries`: one hash; field `server:tool:hash`, value the entry as one JSON line
 *   (the same text a `summaries.jsonl` line holds). One hash and not a key per entry: loading is
 *   an HSCAN of that hash alone (a SCAN would walk every key of the database, other programs'
 *   too), `clear` is one DEL, and the entries of a cache cannot be mixed up with other keys.
 * - `<prefix>:claim:<server:tool:hash>`: the lease of the host summarizing that key (`SET NX PX`);
 *   a key of its own because each needs its own expiry, which hash fields do not have.
 * - channel `<prefix>:landed:<db>`: every entry written is published there as its JSON line.
 *   Pub/sub ignores the database number, so the channel carries it.
 */
export interface RedisLayout {
  entries: string;
  claim(key: string): string;
  channel: string;
}

/** The layout of `prefix` in database `db`. */
export function redisLayout(prefix: string, db: number): RedisLayout {
  return {
    entries: `${prefix}:summaries`,
    claim: (key) => `${prefix}:claim:${key}`,
    channel: `${prefix}:landed:${db}`,
  };
}

/** Fields read per HSCAN call: a load of 100,000 entries is a hundred round trips, none of them long. */
export const SCAN_COUNT = 1_000;
