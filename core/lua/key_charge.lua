-- Check and charge an API key's characters for the day in one step: concurrent requests
-- never spend more than the quota.
-- KEYS: counter   ARGV: chars, limit (-1: none), ttl -> {1, used after} or {0, used before}
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
if limit >= 0 and used + n > limit then return {0, used} end
used = redis.call('INCRBY', KEYS[1], n)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return {1, used}
