-- Count one delivery of a chunk and mark its job running.
-- KEYS: job, deliveries, results, the lane's started mark (or '')
-- ARGV: chunk, now, ttl, enqueued_at, job index... (every index the chunk fills)
-- -> {status ('' when the job is gone), deliveries of this chunk, indices that have a result}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'', 0, {}} end
local status = redis.call('HGET', KEYS[1], 'status')
local n = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
if n == 1 and KEYS[4] ~= '' then
  local mark = tonumber(redis.call('GET', KEYS[4]) or '0')
  if tonumber(ARGV[4]) > mark then redis.call('SET', KEYS[4], ARGV[4]) end
end
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[2])
  status = 'running'
end
local done = {}
-- only this chunk writes these indices: a first delivery cannot find results
if n > 1 and #ARGV > 4 then
  local present = hmget_many(KEYS[3], 5, #ARGV)
  for i = 1, #present do
    if present[i] then done[#done + 1] = ARGV[i + 4] end
  end
end
return {status, n, done}
