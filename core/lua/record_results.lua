-- Write segment outcomes once each (first writer wins, as HSETNX would), count the new ones,
-- finalise the job when every segment has one.
-- KEYS: job, results, chunk ledger, every lane's active set...
-- ARGV: job_id, now, ttl, channel, chunk ('' = none), then (index, outcome json, ok '1'/'0')...
-- -> {done, failed, status} ({-1, -1, ''} when the job is gone)
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, -1, ''} end
-- which indices have a result already: one HMGET per batch, not a call per index
local fields = {}
for i = 6, #ARGV, 3 do fields[#fields + 1] = ARGV[i] end
local present = {}
for b = 1, #fields, UNPACK_MAX do
  local got = redis.call('HMGET', KEYS[2], unpack(fields, b, math.min(b + UNPACK_MAX - 1, #fields)))
  for k = 1, #got do present[b + k - 1] = got[k] end
end
local nd, nf = 0, 0
local new = {}
for k = 1, #fields do
  local i = 6 + (k - 1) * 3
  if not present[k] and not new[ARGV[i]] then
    new[ARGV[i]] = ARGV[i + 1]
    if ARGV[i + 2] == '1' then nd = nd + 1 else nf = nf + 1 end
  end
end
local pairs_ = {}
for field, value in pairs(new) do
  pairs_[#pairs_ + 1] = field
  pairs_[#pairs_ + 1] = value
  if #pairs_ >= UNPACK_MAX then
    redis.call('HSET', KEYS[2], unpack(pairs_))
    pairs_ = {}
  end
end
if #pairs_ > 0 then redis.call('HSET', KEYS[2], unpack(pairs_)) end
-- every outcome of the chunk is written: it leaves the ledger
if ARGV[5] ~= '' then redis.call('HDEL', KEYS[3], ARGV[5]) end
local done = redis.call('HINCRBY', KEYS[1], 'done', nd)
local failed = redis.call('HINCRBY', KEYS[1], 'failed', nf)
local total = tonumber(redis.call('HGET', KEYS[1], 'total'))
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[2])
  status = 'running'
end
if status == 'running' and done + failed >= total then
  if failed == 0 then status = 'succeeded' elseif done == 0 then status = 'failed'
  else status = 'partial' end
  finalize(KEYS[1], KEYS[3], 4, ARGV[1], status, ARGV[2], ARGV[4])
end
local ttl = tonumber(ARGV[3])
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
return {done, failed, status}
