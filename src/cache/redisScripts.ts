/**
 * Lua run inside Redis, where each script is atomic: no other command interleaves between its
 * read and its write.
 */

/**
 * Writes an entry unless the hash holds a newer one for its key, and publishes it when written.
 * KEYS[1] the hash; ARGV: field, JSON line, createdAt, channel. Returns 1 when written, 0 when the hash
 * holds this very entry or a newer one. Newest
 * `createdAt` wins (ISO-8601 UTC strings sort as times): a spool flushed after an outage, or an
 * import of an old export, never replaces a summary written since.
 */
export const WRITE_SCRIPT = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current == ARGV[2] then
  return 0
end
if current then
  local ok, entry = pcall(cjson.decode, current)
  if ok and type(entry) == 'table' and type(entry.createdAt) == 'string' and entry.createdAt > ARGV[3] then
    return 0
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1
`;

/** Extends a lease by ARGV[2] ms if it still holds token ARGV[1]. Returns 1 when extended. */
export const RENEW_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`;

/** Deletes a lease if it still holds token ARGV[1] (not one another host took after it expired). */
export const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;
