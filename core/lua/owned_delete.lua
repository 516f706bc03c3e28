-- Hide a record an API key owns at once and keep its data for jobs already accepted; its bytes
-- go back to the owner's storage quota.
-- KEYS: record hash, the owner's index, the owner's storage set and hash (or '', ''), then
--       the record's data keys (expire with it)
-- ARGV: id, retention seconds, storage member
-- -> 1 deleted, 0 no such record
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'deleted') == '1' then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[1], 'deleted', '1')
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
for i = 5, #KEYS do redis.call('EXPIRE', KEYS[i], tonumber(ARGV[2])) end
if KEYS[3] ~= '' then storage_release(KEYS[3], KEYS[4], ARGV[3]) end
return 1
