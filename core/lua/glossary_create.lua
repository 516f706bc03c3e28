-- Create a glossary atomically, refusing an owner past its glossary limit.
-- KEYS: glossary hash, terms, the owner's index
-- ARGV: max per owner, created_at, id, terms json, then hash field/value pairs
-- -> 1 created, 0 over the limit
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[1]) then return 0 end
hset_pairs(KEYS[1], 5, #ARGV)
redis.call('SET', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return 1
