-- Shared steps of every mtfleet script. core/scripts.py puts this file in front of each
-- script it loads (a Redis script cannot include another), so these are local functions.

-- At most this many values go through one unpack(): Lua's C stack holds about 8,000
-- (LUAI_MAXCSTACK); past it a script fails with "too many results to unpack".
-- tests/integration/test_lua_limits.py measures the real limit on the server.
local UNPACK_MAX = 1000

-- HSET key field value ... for ARGV[first..last] (field/value pairs), in batches.
local function hset_pairs(key, first, last)
  local i = first
  while i <= last do
    local j = math.min(i + UNPACK_MAX - 1, last)
    if (j - i) % 2 == 0 then j = j - 1 end  -- a batch ends on a value
    redis.call('HSET', key, unpack(ARGV, i, j))
    i = j + 1
  end
end

-- HMGET key ARGV[first..last], in batches: one value (or false) per field, in order.
local function hmget_many(key, first, last)
  local out = {}
  local i = first
  while i <= last do
    local j = math.min(i + UNPACK_MAX - 1, last)
    local got = redis.call('HMGET', key, unpack(ARGV, i, j))
    for k = 1, #got do out[#out + 1] = got[k] end
    i = j + 1
  end
  return out
end

-- Finalise a job, the one way every script does it: set the final status and finished_at
-- (plus extra field/value pairs), drop its chunk ledger, take it off its pool and lane's active
-- set (active_key; '' when the caller does not know it: the reconciler drops it there) and
-- announce it once on the job-done channel.
-- Tell whoever waits on a job (API long polls, workers holding its chunks) to look at it again.
local function announce(channel, job_id)
  redis.call('PUBLISH', channel, job_id)
end

-- The webhook outbox (core/outbox.py). A final job that carries a callback_url gets its event
-- written here, by the script that makes it final, so that no crash between the two can lose
-- it: the event hash (keys.webhook) with its webhook-id (the same on every attempt), its type
-- and a snapshot of the job's public fields (the body is built from it once), and its due time
-- (keys.WEBHOOKS_DUE). Written once per job; event_key '' writes nothing.
local SNAPSHOT = {'id', 'status', 'lane', 'source_lang', 'target_lang', 'done', 'failed',
  'total', 'cached', 'created_at', 'started_at', 'finished_at', 'error', 'document_format',
  'detected_source_lang', 'callback_url', 'owner', 'pool', 'adapter'}

local function outbox_add(job_key, event_key, due_key, job_id, now)
  if event_key == '' then return end
  if not redis.call('HGET', job_key, 'callback_url') then return end
  if redis.call('EXISTS', event_key) == 1 then return end
  local values = redis.call('HMGET', job_key, unpack(SNAPSHOT))
  local status = values[2]
  local fields = {'webhook_id', 'msg_' .. job_id .. '_' .. status, 'type', 'job.' .. status,
    'state', 'pending', 'created_at', now, 'attempts', 0}
  for i, name in ipairs(SNAPSHOT) do
    if values[i] then
      fields[#fields + 1] = 'job.' .. name
      fields[#fields + 1] = values[i]
    end
  end
  redis.call('HSET', event_key, unpack(fields))
  redis.call('ZADD', due_key, now, job_id)
end

-- ``outbox``: {event key, due key} of the job's webhook (or nil: none).
local function finalize(job_key, ledger_key, active_key, job_id, status, now, channel, extra,
                        outbox)
  redis.call('HSET', job_key, 'status', status, 'finished_at', now, unpack(extra or {}))
  redis.call('DEL', ledger_key)
  if active_key ~= '' then redis.call('ZREM', active_key, job_id) end
  if outbox then outbox_add(job_key, outbox[1], outbox[2], job_id, now) end
  announce(channel, job_id)
end

-- An API key's storage quota: a hash (member -> bytes, plus "total") and a sorted set (member
-- -> when its data expires; +inf while it is kept). Reserve ``bytes`` for ``member`` unless
-- the key's total would pass ``limit`` (-1: none), after forgetting members whose data has
-- expired by ``now``. -> false when reserved, else the bytes in use.
local function storage_reserve(zset, hash, member, bytes, expires_at, now, limit)
  local gone = redis.call('ZRANGEBYSCORE', zset, '-inf', now, 'LIMIT', 0, UNPACK_MAX)
  if #gone > 0 then
    local sizes = redis.call('HMGET', hash, unpack(gone))
    local freed = 0
    for k = 1, #sizes do freed = freed + tonumber(sizes[k] or 0) end
    redis.call('HDEL', hash, unpack(gone))
    redis.call('ZREM', zset, unpack(gone))
    redis.call('HINCRBY', hash, 'total', -freed)
  end
  local used = tonumber(redis.call('HGET', hash, 'total') or '0')
  if limit >= 0 and used + bytes > limit then return used end
  redis.call('HSET', hash, member, bytes)
  redis.call('HINCRBY', hash, 'total', bytes)
  redis.call('ZADD', zset, expires_at, member)
  return false
end

-- Give back what ``member`` reserved (a purge, a deleted glossary).
local function storage_release(zset, hash, member)
  local bytes = tonumber(redis.call('HGET', hash, member) or '0')
  if bytes > 0 then redis.call('HINCRBY', hash, 'total', -bytes) end
  redis.call('HDEL', hash, member)
  redis.call('ZREM', zset, member)
end
