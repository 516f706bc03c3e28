-- Count one delivery of a chunk, mark its job running and the chunk in flight since now.
-- KEYS: job, deliveries, the pool lane's started mark (or ''), in-flight starts, chunk ledger,
--       the job's active set (its pool and lane's), webhook event, webhooks due
-- ARGV: chunk, now, ttl, enqueued_at, job_id, channel
-- -> {status ('' when the job is gone), deliveries of this chunk (0: not started)}
-- (A redelivered chunk then asks which of its indices have a result: JobStore.start_chunk.)
-- A chunk of a job being cancelled does not start: it leaves the ledger, and the job is
-- cancelled once no chunk of it is in flight.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'', 0} end
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'cancelling' then
  redis.call('HDEL', KEYS[5], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  if redis.call('HLEN', KEYS[5]) == 0 then
    finalize(KEYS[1], KEYS[5], KEYS[6], ARGV[5], 'cancelled', ARGV[2], ARGV[6], nil,
      {KEYS[7], KEYS[8]})
    status = 'cancelled'
  end
  return {status, 0}
end
if status ~= 'queued' and status ~= 'running' then return {status, 0} end
local n = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[4], tonumber(ARGV[3]))
if n == 1 and KEYS[3] ~= '' then
  local mark = tonumber(redis.call('GET', KEYS[3]) or '0')
  if tonumber(ARGV[4]) > mark then redis.call('SET', KEYS[3], ARGV[4]) end
end
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[2])
  status = 'running'
end
return {status, n}
