-- Store a new job (its hash, the results known at once, its chunk ledger) unless its
-- Idempotency-Key already names a job.
-- KEYS: job, results, idempotency key (or ''), chunk ledger, the lane's active set
-- ARGV: ttl, idempotency ttl, idempotency value, n_meta, n_results, created_at,
--       meta field/value pairs (n_meta values), results index/json pairs (n_results values),
--       ledger chunk/message pairs (the rest)
-- -> false when created, else the idempotency key's earlier value
local ttl = tonumber(ARGV[1])
if KEYS[3] ~= '' then
  local existing = redis.call('GET', KEYS[3])
  if existing then return existing end
  redis.call('SET', KEYS[3], ARGV[3], 'EX', tonumber(ARGV[2]))
end
local n_meta, n_results = tonumber(ARGV[4]), tonumber(ARGV[5])
local first = 7
hset_pairs(KEYS[1], first, first + n_meta - 1)
redis.call('EXPIRE', KEYS[1], ttl)
first = first + n_meta
if n_results > 0 then
  hset_pairs(KEYS[2], first, first + n_results - 1)
  redis.call('EXPIRE', KEYS[2], ttl)
end
first = first + n_results
if #ARGV >= first then
  hset_pairs(KEYS[4], first, #ARGV)
  redis.call('EXPIRE', KEYS[4], ttl)
  redis.call('ZADD', KEYS[5], tonumber(ARGV[6]), redis.call('HGET', KEYS[1], 'id'))
end
return false
