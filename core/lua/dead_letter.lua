-- List a chunk on the dead-letter list once, however often this runs (a client retrying
-- after a lost reply too), keep its message beside its job (for `mtfleet dead-letters retry`:
-- the ledger drops it once its failed results are written) and trim the list (lib.lua).
-- KEYS: deliveries, dead-letter list, chunk ledger, dead chunks, job
-- ARGV: chunk, now, entry json, most entries, most age (s)
-- -> 1 when this call listed it, else 0
if redis.call('HSETNX', KEYS[1], 'dead-lettered:' .. ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[3])
dead_letters_trim(KEYS[2], tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5]))
local message = redis.call('HGET', KEYS[3], ARGV[1])
if message then
  redis.call('HSET', KEYS[4], ARGV[1], message)
  local ttl = redis.call('PTTL', KEYS[5])
  if ttl > 0 then
    redis.call('PEXPIRE', KEYS[4], ttl)
  else
    redis.call('EXPIRE', KEYS[4], tonumber(ARGV[5]))
  end
end
return 1
