-- Count one delivery of a chunk, mark its job running and the chunk in flight since now.
-- The chunk has reached a worker: it is off the pool lane's released hash (core/backlog.py).
-- KEYS: job, deliveries, in-flight starts, chunk ledger, released (or '')
-- ARGV: chunk, now, ttl, job_id
-- -> {status ('' when the job is gone), deliveries of this chunk (0: not started)}
-- (A redelivered chunk then asks which of its indices have a result: JobStore.start_chunk.)
-- A job being cancelled starts no chunk that was not in flight at the cancel (cancel_job.lua
-- took those off its ledger). One still on its ledger is a second delivery of a chunk in
-- flight: it runs and is counted like any redelivery, and it leaves the ledger only when a
-- delivery of it records (record_results.lua), so a duplicate never settles the cancel under a
-- worker that still runs the chunk, and a dead worker's chunk still ends the cancel when it
-- comes back.
if KEYS[5] ~= '' then redis.call('HDEL', KEYS[5], ARGV[4] .. ':' .. ARGV[1]) end
if redis.call('EXISTS', KEYS[1]) == 0 then return {'', 0} end
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'cancelling' and redis.call('HEXISTS', KEYS[4], ARGV[1]) == 0 then
  return {status, 0}
end
if status ~= 'queued' and status ~= 'running' and status ~= 'cancelling' then
  return {status, 0}
end
local n = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[3], tonumber(ARGV[3]))
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[2])
  status = 'running'
end
return {status, n}
