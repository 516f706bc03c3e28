-- Count one delivery of a chunk and mark its job running.
-- KEYS: job, deliveries, the lane's started mark (or '')
-- ARGV: chunk, now, ttl, enqueued_at
-- -> {status ('' when the job is gone), deliveries of this chunk}
-- (A redelivered chunk then asks which of its indices have a result: JobStore.start_chunk.)
if redis.call('EXISTS', KEYS[1]) == 0 then return {'', 0} end
local status = redis.call('HGET', KEYS[1], 'status')
local n = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
if n == 1 and KEYS[3] ~= '' then
  local mark = tonumber(redis.call('GET', KEYS[3]) or '0')
  if tonumber(ARGV[4]) > mark then redis.call('SET', KEYS[3], ARGV[4]) end
end
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[2])
  status = 'running'
end
return {status, n}
