-- Add or replace pairs of a translation memory, only if it is still live and at the version
-- the change was made against: append the change to its log, or (compact) write its whole
-- content as the new base and empty the log. Its size is reserved again against the owner's
-- storage quota (nothing is written when the new size does not fit).
-- KEYS: memory hash, base, log, the owner's storage set and hash (or '', '')
-- ARGV: id, expected version, new version, 'append' or 'compact', the change or the new base,
--       bytes (the memory's size after), now, storage limit (-1: none),
--       then hash field/value pairs to set
-- -> 1 done, 0 no such live memory, -1 another change came first,
--    {"storage", bytes in use} over the storage quota
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'deleted') == '1' then
  return 0
end
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[2] then return -1 end
if KEYS[4] ~= '' then
  local member = 'tm:' .. ARGV[1]
  local before = tonumber(redis.call('HGET', KEYS[5], member) or '0')
  storage_release(KEYS[4], KEYS[5], member)
  local used = storage_reserve(KEYS[4], KEYS[5], member, tonumber(ARGV[6]), '+inf',
    tonumber(ARGV[7]), tonumber(ARGV[8]))
  if used then
    storage_reserve(KEYS[4], KEYS[5], member, before, '+inf', tonumber(ARGV[7]), -1)
    return {'storage', used}
  end
end
if ARGV[4] == 'append' then
  redis.call('HSET', KEYS[1], 'log_len', redis.call('RPUSH', KEYS[3], ARGV[5]))
else
  redis.call('SET', KEYS[2], ARGV[5])
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[1], 'log_len', 0)
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
end
hset_pairs(KEYS[1], 9, #ARGV)
redis.call('HSET', KEYS[1], 'version', ARGV[3])
return 1
