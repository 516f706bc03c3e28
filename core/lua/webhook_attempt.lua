-- Record one delivery attempt of a job's webhook event: count it, keep what it got, and either
-- schedule the next attempt or end the event (delivered, gone: the receiver answered 410, or
-- failed: given up). A success recorded already wins over a late failure of an attempt whose
-- lease had run out (at least once: both were sent).
-- KEYS: webhook event, the keys' turns (keys.WEBHOOKS_DUE)
-- ARGV: job_id, now, outcome ('retry', 'delivered', 'gone', 'failed'), HTTP status (or ''),
--       error (or ''), next attempt time (retry), seconds an ended event is kept, the job's API
--       key ('' : none)
-- -> the event's state after the call ('' when there is no such event)
if redis.call('EXISTS', KEYS[1]) == 0 then
  webhook_drop(KEYS[2], ARGV[8], ARGV[1])
  return ''
end
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'delivered' then return state end
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'last_attempt_at', ARGV[2], 'last_status', ARGV[4],
  'last_error', ARGV[5])
if ARGV[3] == 'retry' then
  if state ~= 'pending' then return state end
  redis.call('HSET', KEYS[1], 'next_attempt_at', ARGV[6])
  webhook_due(KEYS[2], ARGV[8], ARGV[1], tonumber(ARGV[6]))
  return 'pending'
end
redis.call('HSET', KEYS[1], 'state', ARGV[3])
if ARGV[3] == 'delivered' then redis.call('HSET', KEYS[1], 'delivered_at', ARGV[2]) end
redis.call('HDEL', KEYS[1], 'next_attempt_at')
webhook_drop(KEYS[2], ARGV[8], ARGV[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[7]))
return ARGV[3]
