-- Create a record an API key owns (a glossary, a translation memory) atomically, refusing an
-- owner past its limit of such records or its storage quota (nothing is written then).
-- KEYS: record hash, its body, the owner's index, the owner's storage set and hash (or '', '')
-- ARGV: max per owner, created_at, id, body, bytes, storage limit (-1: none), storage member,
--       then hash field/value pairs
-- -> 1 created, 0 over the limit of records, {"storage", bytes in use} over the storage quota
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[1]) then return 0 end
if KEYS[4] ~= '' then
  local used = storage_reserve(KEYS[4], KEYS[5], ARGV[7], tonumber(ARGV[5]), '+inf',
    tonumber(ARGV[2]), tonumber(ARGV[6]))
  if used then return {'storage', used} end
end
hset_pairs(KEYS[1], 8, #ARGV)
redis.call('SET', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return 1
