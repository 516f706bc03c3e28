-- An API key's share of the interactive lane (core/interactive.py): reserve ``segments`` for a
-- submission under way unless the key's interactive work not done yet would pass its limits.
-- That work is read, not counted: each entry's job hash says what is left of it (total - done
-- - failed), and an entry whose job is final, cancelling or gone leaves here, so the share
-- comes back however a job ends (finished, failed, cancelled, expired, purged), whichever
-- process ends it, without any other script knowing of this hash. A reservation ('r:<token>')
-- not yet bound to its job counts until ``grace`` seconds after it was made (an API process
-- that died between the two steps leaves nothing held for longer).
-- KEYS: the key's interactive hash (keys.api_key_interactive)
-- ARGV: job key prefix (keys.job('')), now (s), grace (s), segment limit, job limit,
--       reservation field ('r:<token>'), segments asked, ttl (s)
-- -> {1, segments held after, jobs held after} or {0, segments held, jobs held}
local now = tonumber(ARGV[2])
local grace = tonumber(ARGV[3])
local segment_limit, job_limit = tonumber(ARGV[4]), tonumber(ARGV[5])
local asked = tonumber(ARGV[7])
local entries = redis.call('HGETALL', KEYS[1])
local segments, jobs = 0, 0
for i = 1, #entries, 2 do
  local field = entries[i]
  local held, at = string.match(entries[i + 1], '^(%d+) ([%d.]+)$')
  local left = nil
  if string.sub(field, 1, 2) == 'r:' then
    if at and now - tonumber(at) <= grace then left = tonumber(held) end
  else
    local job = redis.call('HMGET', ARGV[1] .. field, 'status', 'total', 'done', 'failed')
    if job[1] == 'queued' or job[1] == 'running' then
      left = math.max(0, (tonumber(job[2]) or 0) - (tonumber(job[3]) or 0)
        - (tonumber(job[4]) or 0))
    end
  end
  if left == nil then
    redis.call('HDEL', KEYS[1], field)
  else
    segments = segments + left
    jobs = jobs + 1
  end
end
if jobs > 0 and (segments + asked > segment_limit or jobs + 1 > job_limit) then
  return {0, segments, jobs}
end
redis.call('HSET', KEYS[1], ARGV[6], ARGV[7] .. ' ' .. ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[8]))
return {1, segments + asked, jobs + 1}
