-- Hide a glossary at once and keep its terms for jobs already accepted; its bytes go back to
-- the owner's storage quota.
-- KEYS: glossary hash, terms, the owner's index, the owner's storage set and hash (or '', '')
-- ARGV: id, retention seconds
-- -> 1 deleted, 0 no such glossary
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'deleted') == '1' then
  return 0
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], 'deleted', '1')
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
if KEYS[4] ~= '' then storage_release(KEYS[4], KEYS[5], 'g:' .. ARGV[1]) end
return 1
