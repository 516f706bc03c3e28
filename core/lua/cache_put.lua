-- Store phrase-cache entries: one round trip and one reply for a whole chunk.
-- KEYS: one phrase key per entry
-- ARGV: ttl, then one translation per key
-- -> how many were stored
local ttl = ARGV[1]
for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[i + 1], 'EX', ttl) end
return #KEYS
