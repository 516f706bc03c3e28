-- Claim the webhook events that are due: each is leased to the caller, its due time moved to
-- the end of the lease, so an event whose deliverer dies mid-attempt is due again after it.
-- KEYS: webhooks due (keys.WEBHOOKS_DUE)
-- ARGV: now, lease seconds, most to claim
-- -> the job ids whose events were claimed
local now = tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), id) end
return ids
