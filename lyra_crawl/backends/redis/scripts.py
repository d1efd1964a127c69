"""The Lua scripts of the Redis Coordinator, one per step; Redis runs each one atomically.

Times are read with Redis's TIME inside the script, never sent by a node. Times and tokens
travel as '%.17g' strings, which round-trip a double exactly (Redis would truncate a Lua
number in a reply to an integer).
"""

# KEYS[1]: the day's usage hash (engine -> requests); ARGV: engine, limit (-1: none), ttl_s.
RESERVE_QUOTA = """
local limit = tonumber(ARGV[2])
if limit == 0 then return 0 end
if limit > 0 and tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') >= limit then
  return 0
end
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""

# A slot's `next_allowed` is the end of the holder's lease while a request is in flight, and
# release time + 1/qps once it is answered; `held` tells the two apart.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

# KEYS[1]: the engine's slot; ARGV: lease_s. Returns {1, token} or {0, wait_s, held}. A claim
# refused while the slot is held marks it `waiting`, so that its release is published.
CLAIM_RATE_SLOT = (
    _NOW
    + """
local slot = redis.call('HMGET', KEYS[1], 'next_allowed', 'held')
local next_allowed = tonumber(slot[1])
if next_allowed == nil or next_allowed <= now then
  local token = string.format('%.17g', now + tonumber(ARGV[1]))
  redis.call('HSET', KEYS[1], 'next_allowed', token, 'held', '1')
  return {1, token}
end
if slot[2] == '1' then redis.call('HSET', KEYS[1], 'waiting', '1') end
return {0, string.format('%.17g', next_allowed - now), slot[2]}
"""
)

# KEYS[1]: the engine's slot; ARGV: token, interval_s, the channel of releases, the engine. A
# lease that ran out may already be someone else's: a token that is no longer the slot's frees
# nothing. A release someone waits for is published on the channel (the engine's name).
RELEASE_RATE_SLOT = (
    _NOW
    + """
if tonumber(redis.call('HGET', KEYS[1], 'next_allowed')) == tonumber(ARGV[1]) then
  local next_allowed = string.format('%.17g', now + tonumber(ARGV[2]))
  redis.call('HSET', KEYS[1], 'next_allowed', next_allowed, 'held', '0')
  if redis.call('HDEL', KEYS[1], 'waiting') == 1 then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
end
return 0
"""
)

# KEYS[1]: the engine's breaker. Returns {now, {field, value, …}}: the state and the time it is
# judged at, read together.
READ_BREAKER = (
    _NOW
    + """
return {string.format('%.17g', now), redis.call('HGETALL', KEYS[1])}
"""
)

# KEYS[1]: the engine's breaker; ARGV: the version read, then field, value, … of the new state.
# Compare-and-set: 0 when another node changed the breaker since it was read.
WRITE_BREAKER = """
if (redis.call('HGET', KEYS[1], 'version') or '0') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('HINCRBY', KEYS[1], 'version', 1)
return 1
"""

# KEYS[1]: the day's usage hash, KEYS[2…]: each engine's breaker; ARGV: the engines.
# Returns {used, {field, value, …}} per engine, in one snapshot.
ENGINE_STATES = """
local states = {}
for i, engine in ipairs(ARGV) do
  states[i] = {redis.call('HGET', KEYS[1], engine) or '0', redis.call('HGETALL', KEYS[i + 1])}
end
return states
"""
