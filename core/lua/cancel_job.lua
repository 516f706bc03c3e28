-- Cancel a job that is not final yet: no chunk of it starts from now on. Chunks in flight (a
-- worker started them) finish and keep their results; the job is 'cancelling' until the last
-- of them has, then 'cancelled' with final counters (at once when none is in flight).
-- Its chunks waiting in the backlog leave it at once (the depth counts are exact at any depth).
-- KEYS: job, chunk ledger, in-flight starts, the job's active set (or ''), webhook event,
--       webhooks due, the backlog's pending list, owner list, ring, sizes, credit
-- ARGV: job_id, now, channel, owner
-- -> the status after the call ('' when the job is gone)
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return '' end
if status ~= 'queued' and status ~= 'running' then return status end
backlog_drop({KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]}, ARGV[4], ARGV[1])
-- a chunk never started leaves the ledger: a worker that pulls it skips it
local chunks = redis.call('HKEYS', KEYS[2])
for _, chunk in ipairs(chunks) do
  if redis.call('HEXISTS', KEYS[3], chunk) == 0 then redis.call('HDEL', KEYS[2], chunk) end
end
if redis.call('HLEN', KEYS[2]) == 0 then
  finalize(KEYS[1], KEYS[2], KEYS[4], ARGV[1], 'cancelled', ARGV[2], ARGV[3], nil,
    {KEYS[5], KEYS[6]})
  return 'cancelled'
end
redis.call('HSET', KEYS[1], 'status', 'cancelling')
announce(ARGV[3], ARGV[1])  -- workers abort its engine work; waiters look again
return 'cancelling'
