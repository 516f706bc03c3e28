-- List a chunk on the dead-letter list once, however often this runs (a client retrying
-- after a lost reply too).
-- KEYS: deliveries, dead-letter list
-- ARGV: chunk, now, entry json
-- -> 1 when this call listed it, else 0
if redis.call('HSETNX', KEYS[1], 'dead-lettered:' .. ARGV[1], ARGV[2]) == 1 then
  redis.call('LPUSH', KEYS[2], ARGV[3])
  return 1
end
return 0
