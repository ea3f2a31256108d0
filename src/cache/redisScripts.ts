/**
 * Lua run inside Redis, where each script is atomic: no other command interleaves between its
 * read and its write.
 */

/**
 * Writes an entry unless the hash holds a newer one for its key, and publishes it when written.
 * KEYS[1] the hash; ARGV: field, JSON line, createdAt, channel, the latest createdAt the writer
 * accepts (its clock plus the skew allowance), "1" to force, the entry size bound in bytes.
 * Returns 1 when written, 0 when the hash holds this very entry or a newer one.
 *
 * Newest `createdAt` wins (ISO-8601 UTC strings sort as times): a spool flushed after an outage,
 * or an import of an old export, never replaces a summary written since. What the hash holds
 * counts as newer only when it is a servable entry: a value over the bound (not even read here),
 * one that does not decode, or one whose `createdAt` is not an ISO-8601 UTC time or lies beyond
 * the allowance is replaced, so a forged date cannot pin an entry. A forced write (`summarize
 * warm --force`, a summary the guard refused) replaces whatever the hash holds.
 */
export const WRITE_SCRIPT = `
local bound = tonumber(ARGV[7])
if string.len(ARGV[2]) > bound then
  return redis.error_reply('entry of ' .. string.len(ARGV[2]) .. ' bytes, over the ' .. bound .. '-byte bound')
end
local size = redis.call('HSTRLEN', KEYS[1], ARGV[1])
if size > 0 and size <= bound then
  local current = redis.call('HGET', KEYS[1], ARGV[1])
  if current == ARGV[2] then
    return 0
  end
  if ARGV[6] ~= '1' then
    local ok, entry = pcall(cjson.decode, current)
    if ok and type(entry) == 'table' then
      local at = entry.createdAt
      if type(at) == 'string' and at > ARGV[3] and at <= ARGV[5] and string.find(at, '^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.?%d*Z$') then
        return 0
      end
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1
`;

/**
 * One page of the entries hash, without ever sending a value (or a field name) over the size
 * bound: HSCAN runs here, 100 fields at a time, until the page has ARGV[2] fields or ARGV[4] bytes
 * of values or the scan is over. KEYS[1] the hash; ARGV: cursor, fields per page, entry size
 * bound, bytes per page, "1" to delete the fields over the bound here (compaction), and an
 * optional MATCH pattern. Returns `{cursor, {field, value, ...}, {field, size, ...}}`: the fields
 * within the bound with their values, then those over it with the size of their value (or of
 * their name, a name over the bound being cut to its first 256 bytes).
 *
 * HSCAN copies each value it visits inside Redis, so a value of hundreds of megabytes costs Redis
 * seconds per scan (Redis 7.4's HSCAN NOVALUES would not); it never leaves Redis.
 */
export const PAGE_SCRIPT = `
local cursor = ARGV[1]
local wanted = tonumber(ARGV[2])
local bound = tonumber(ARGV[3])
local budget = tonumber(ARGV[4])
local kept = {}
local over = {}
local fields = 0
local bytes = 0
repeat
  local page
  if ARGV[6] then
    page = redis.call('HSCAN', KEYS[1], cursor, 'MATCH', ARGV[6], 'COUNT', 100)
  else
    page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 100)
  end
  cursor = page[1]
  local flat = page[2]
  for i = 1, #flat, 2 do
    local name = flat[i]
    local size = string.len(flat[i + 1])
    fields = fields + 1
    if size > bound or string.len(name) > bound then
      if ARGV[5] == '1' then
        redis.call('HDEL', KEYS[1], name)
      end
      if string.len(name) > bound then
        size = string.len(name)
        name = string.sub(name, 1, 256)
      end
      over[#over + 1] = name
      over[#over + 1] = size
    else
      kept[#kept + 1] = name
      kept[#kept + 1] = flat[i + 1]
      bytes = bytes + size
    end
  end
until cursor == '0' or fields >= wanted or bytes >= budget
return {cursor, kept, over}
`;

/**
 * One field of the entries hash, unless its value is over the size bound. KEYS[1] the hash; ARGV:
 * field, bound. Returns the value, nil when there is none, or the value's size (a number) when it
 * is over the bound.
 */
export const READ_SCRIPT = `
local size = redis.call('HSTRLEN', KEYS[1], ARGV[1])
if size > tonumber(ARGV[2]) then
  return size
end
return redis.call('HGET', KEYS[1], ARGV[1])
`;

/**
 * Claims a key for ARGV[2] ms with token ARGV[1]: SET NX PX, or, when the claim there has no
 * expiry (PTTL -1), takes it over: abridge never sets one without, so it was left by something
 * else and would otherwise block the key forever. Returns 1 when claimed.
 */
export const CLAIM_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then
  return 1
end
if redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
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
