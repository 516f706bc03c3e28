-- Store phrase-cache entries: one round trip and one reply for a whole chunk.
-- KEYS: one phrase key per entry, then the set of the keys the job wrote (keys.job_phrases),
--   then the job's purge mark (keys.job_purged)
-- ARGV: ttl, the job set's ttl, then one translation per phrase key
-- -> how many were stored: none once the job was purged (a chunk of it that was still in the
--    engine when the purge deleted the job's entries writes nothing after it)
local purged = KEYS[#KEYS]
if redis.call('EXISTS', purged) == 1 then return 0 end
local ttl = ARGV[1]
local n = #KEYS - 2
for i = 1, n do redis.call('SET', KEYS[i], ARGV[i + 2], 'EX', ttl) end
-- the job's own entries, remembered in batches (unpack has a limit: see start_chunk.lua)
local written = KEYS[n + 1]
for i = 1, n, 1000 do
  redis.call('SADD', written, unpack(KEYS, i, math.min(i + 999, n)))
end
redis.call('EXPIRE', written, ARGV[2])
return n
