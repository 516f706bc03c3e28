-- Hide a translation memory at once and keep its pairs for jobs already accepted; its bytes go
-- back to the owner's storage quota.
-- KEYS: memory hash, base, log, the owner's index, the owner's storage set and hash (or '', '')
-- ARGV: id, retention seconds
-- -> 1 deleted, 0 no such memory
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'deleted') == '1' then
  return 0
end
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('HSET', KEYS[1], 'deleted', '1')
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], tonumber(ARGV[2])) end
if KEYS[5] ~= '' then storage_release(KEYS[5], KEYS[6], 'tm:' .. ARGV[1]) end
return 1
