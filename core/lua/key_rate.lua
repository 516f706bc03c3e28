-- GCRA rate limit of an API key (Redis's clock, so every API process agrees): one stored
-- number, the theoretical arrival time (TAT) of the next request, in microseconds.
-- KEYS: tat   ARGV: interval_us, burst -> 0 (allowed) or microseconds to wait
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - interval * tonumber(ARGV[2])
if allow_at > now then return allow_at - now end
local ttl_ms = math.ceil((new_tat - now) / 1000) + 1
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', ttl_ms)
return 0
