-- Store phrase-cache entries: one round trip and one reply for a whole chunk.
-- KEYS: one phrase key per entry, then the set of the keys the job wrote (keys.job_phrases)
-- ARGV: ttl, the job set's ttl, then one translation per phrase key
-- -> how many were stored
local ttl = ARGV[1]
local n = #KEYS - 1
for i = 1, n do redis.call('SET', KEYS[i], ARGV[i + 2], 'EX', ttl) end
-- the job's own entries, remembered in batches (unpack has a limit: see start_chunk.lua)
local written = KEYS[#KEYS]
for i = 1, n, 1000 do
  redis.call('SADD', written, unpack(KEYS, i, math.min(i + 999, n)))
end
redis.call('EXPIRE', written, ARGV[2])
return n
