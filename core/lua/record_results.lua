-- Write segment outcomes once each (first writer wins, as HSETNX would), count the new ones,
-- finalise the job when every segment has one (a cancelling job: when no chunk is in flight).
-- A job that is final already takes nothing: a late or duplicate delivery (a chunk that ran on
-- while its job failed or its cancel settled, a message delivered twice) writes no result,
-- moves no counter and announces nothing; the job's end was told once, with these counters.
-- KEYS: job, results, chunk ledger, in-flight starts, the job's active set (or ''), webhook
--       event, webhooks due
-- ARGV: job_id, now, ttl, channel, chunk ('' = none), oks (one '1' or '0' per outcome: whether
--       it is a translation), then (index, outcome json)...
-- -> {done, failed, status} ({-1, -1, ''} when the job is gone)
local current = redis.call('HMGET', KEYS[1], 'status', 'done', 'failed')
if not current[1] then return {-1, -1, ''} end
if current[1] ~= 'queued' and current[1] ~= 'running' and current[1] ~= 'cancelling' then
  return {tonumber(current[2] or '0'), tonumber(current[3] or '0'), current[1]}
end
-- which indices have a result already: one HMGET per batch, not a call per index
local fields = {}
for i = 7, #ARGV, 2 do fields[#fields + 1] = ARGV[i] end
local present = {}
for b = 1, #fields, UNPACK_MAX do
  local got = redis.call('HMGET', KEYS[2], unpack(fields, b, math.min(b + UNPACK_MAX - 1, #fields)))
  for k = 1, #got do present[b + k - 1] = got[k] end
end
local nd, nf = 0, 0
local new = {}
local oks = ARGV[6]
for k = 1, #fields do
  local i = 7 + (k - 1) * 2
  if not present[k] and not new[ARGV[i]] then
    new[ARGV[i]] = ARGV[i + 1]
    if string.byte(oks, k) == 49 then nd = nd + 1 else nf = nf + 1 end  -- 49: '1'
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
if ARGV[5] ~= '' then
  redis.call('HDEL', KEYS[3], ARGV[5])
  redis.call('HDEL', KEYS[4], ARGV[5])
end
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
  finalize(KEYS[1], KEYS[3], KEYS[5], ARGV[1], status, ARGV[2], ARGV[4], nil, {KEYS[6], KEYS[7]})
elseif status == 'cancelling' and redis.call('HLEN', KEYS[3]) == 0 then
  -- the last chunk in flight when the job was cancelled: its counters are final now
  status = 'cancelled'
  finalize(KEYS[1], KEYS[3], KEYS[5], ARGV[1], status, ARGV[2], ARGV[4], nil, {KEYS[6], KEYS[7]})
end
local ttl = tonumber(ARGV[3])
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
return {done, failed, status}
