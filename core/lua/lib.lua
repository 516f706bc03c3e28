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
-- Tell whoever waits on a job to look at it again: on ``channel`` (keys.JOB_DONE_CHANNEL: the
-- API's long polls) and on the job's own (keys.job_events: that channel, ':' and the id), which
-- only the workers holding a chunk of the job follow.
local function announce(channel, job_id)
  redis.call('PUBLISH', channel, job_id)
  redis.call('PUBLISH', channel .. ':' .. job_id, job_id)
end

-- The webhook outbox (core/outbox.py). A final job that carries a callback_url gets its event
-- written here, by the script that makes it final, so that no crash between the two can lose
-- it: the event hash (keys.webhook) with its webhook-id (the same on every attempt), its type
-- and a snapshot of the job's public fields (the body is built from it once), and its due time
-- (webhook_due). Written once per job; event_key '' writes nothing.
local SNAPSHOT = {'id', 'status', 'lane', 'source_lang', 'target_lang', 'done', 'failed',
  'total', 'cached', 'created_at', 'started_at', 'finished_at', 'error', 'document_format',
  'detected_source_lang', 'callback_url', 'owner', 'pool', 'adapter', 'no_trace'}

-- When each event is due, per API key: the key's own sorted set (keys.webhooks_due: the due key
-- .. ':' .. the key, '-' for none), and the key's turn in the due key itself (keys.WEBHOOKS_DUE:
-- never later than its earliest due event; webhook_claim.lua moves it on as it serves the key).
local function webhook_events(due_key, owner)
  return due_key .. ':' .. (owner == '' and '-' or owner)
end

local function webhook_due(due_key, owner, job_id, at)
  redis.call('ZADD', webhook_events(due_key, owner), at, job_id)
  redis.call('ZADD', due_key, 'LT', at, owner)
end

-- (a key with other events keeps its turn: the claim that comes to it moves it on)
local function webhook_drop(due_key, owner, job_id)
  local events = webhook_events(due_key, owner)
  redis.call('ZREM', events, job_id)
  if redis.call('EXISTS', events) == 0 then redis.call('ZREM', due_key, owner) end
end

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
  webhook_due(due_key, redis.call('HGET', job_key, 'owner') or '', job_id, now)
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

-- An API key's characters for the day (core/apikeys.py, Charge): ``counter`` counts them.
-- -> true and the count after ``chars`` more, or false and the count now when those would pass
-- ``limit`` (-1: none). Nothing is written: charge_take takes them, in the same script.
local function charge_fits(counter, chars, limit)
  local used = tonumber(redis.call('GET', counter) or '0')
  if limit >= 0 and used + chars > limit then return false, used end
  return true, used + chars
end

local function charge_take(counter, chars, ttl)
  local used = redis.call('INCRBY', counter, chars)
  redis.call('EXPIRE', counter, ttl)
  return used
end

-- The same characters under the request's reporting tag (core/apikeys.py, Charge.tags):
-- ``hash`` counts the key's day per tag ('' : the request has none, nothing written). A tag past
-- the day's TAGS_PER_DAY is counted under the tag '' (no request has it), so the hash stays
-- bounded whatever tags a caller sends. Negative ``chars`` give them back (ttl 0: kept as is).
local TAGS_PER_DAY = 1000
local function charge_tag(hash, tag, chars, ttl)
  if hash == '' then return end
  if redis.call('HEXISTS', hash, tag) == 0 and redis.call('HLEN', hash) >= TAGS_PER_DAY then
    tag = ''
  end
  redis.call('HINCRBY', hash, tag, chars)
  if ttl > 0 then redis.call('EXPIRE', hash, ttl) end
end

-- An API key's share of the interactive lane (core/interactive.py): its hash lists its
-- interactive jobs (field: job id). What each has left is read from its job's hash (total -
-- done - failed, at job_prefix .. id), and an entry whose job is final, cancelling or gone
-- leaves here, so the share comes back however a job ends, whichever process ends it.
-- -> the segments and jobs held.
local function share_held(hash, job_prefix)
  local entries = redis.call('HKEYS', hash)
  local segments, jobs = 0, 0
  for i = 1, #entries do
    local job = redis.call('HMGET', job_prefix .. entries[i], 'status', 'total', 'done', 'failed')
    if job[1] == 'queued' or job[1] == 'running' then
      segments = segments + math.max(0, (tonumber(job[2]) or 0) - (tonumber(job[3]) or 0)
        - (tonumber(job[4]) or 0))
      jobs = jobs + 1
    else
      redis.call('HDEL', hash, entries[i])
    end
  end
  return segments, jobs
end

-- The backlog (core/backlog.py): where a pool lane's chunks wait until they are released to the
-- broker. A job's chunks not yet released are its pending list; its owner's list holds its jobs
-- in the order they came; the ring holds the owners with chunks waiting, in turn order; sizes
-- counts each owner's chunks, exactly. ``bk``: {pending, owner list, ring, sizes, credit}.

-- ``chunks`` (chunk numbers) of job_id join owner's backlog: a new job at the back of its
-- owner's list; with ``front``, one chunk going back (a requeue) at the front of its job's
-- pending list and its job at the front of the owner's list: first in line again.
local function backlog_add(bk, owner, job_id, chunks, ttl, front)
  if #chunks == 0 then return end
  if front then
    redis.call('LPUSH', bk[1], chunks[1])
    redis.call('LREM', bk[2], 0, job_id)
    redis.call('LPUSH', bk[2], job_id)
  else
    for b = 1, #chunks, UNPACK_MAX do
      redis.call('RPUSH', bk[1], unpack(chunks, b, math.min(b + UNPACK_MAX - 1, #chunks)))
    end
    redis.call('RPUSH', bk[2], job_id)
  end
  redis.call('EXPIRE', bk[1], ttl)
  if redis.call('HINCRBY', bk[4], owner, #chunks) == #chunks then
    redis.call('RPUSH', bk[3], owner)  -- it had nothing waiting: it joins the turns
  end
end

-- A job that will not run (cancelled, failed) leaves the backlog with every chunk it had
-- waiting there; its owner leaves the turns when nothing else of its waits.
local function backlog_drop(bk, owner, job_id)
  if bk[1] == '' then return end  -- a job of no pool (never in a backlog)
  local n = redis.call('LLEN', bk[1])
  if n == 0 then return end
  redis.call('DEL', bk[1])
  redis.call('LREM', bk[2], 0, job_id)
  if redis.call('HINCRBY', bk[4], owner, -n) <= 0 then redis.call('HDEL', bk[4], owner) end
  if redis.call('LLEN', bk[2]) == 0 then
    redis.call('LREM', bk[3], 0, owner)
    redis.call('HDEL', bk[5], owner)
  end
end

-- The one way a job that ended runs again (a dead letter retried: dead_letter_retry.lua): it is
-- running, back on its pool and lane's active set (active_key, '' : none), and nothing of its
-- earlier end is left to tell (its webhook event goes, so its new end writes one; finalize
-- announces that end as any other).
local function reopen(job_key, active_key, job_id, event_key, due_key)
  redis.call('HSET', job_key, 'status', 'running')
  redis.call('HDEL', job_key, 'finished_at')
  if active_key ~= '' then
    local created = tonumber(redis.call('HGET', job_key, 'created_at') or '0') or 0
    redis.call('ZADD', active_key, created, job_id)
  end
  redis.call('DEL', event_key)
  webhook_drop(due_key, redis.call('HGET', job_key, 'owner') or '', job_id)
end

-- The dead-letter list (keys.DEAD_LETTER; LPUSH: the newest first) keeps at most max_entries,
-- none listed more than max_age seconds before now (by its entry's ``at``; an entry without one
-- goes by the cap alone), and expires max_age after its newest entry: its life is bounded
-- however rarely anything is added. A bounded step: what is left goes at the next.
local function dead_letters_trim(list, now, max_entries, max_age)
  redis.call('LTRIM', list, 0, max_entries - 1)
  local function at(raw)
    local ok, entry = pcall(cjson.decode, raw)
    if ok and type(entry) == 'table' then return tonumber(entry['at']) end
    return nil
  end
  for _ = 1, 1000 do
    local oldest = redis.call('LINDEX', list, -1)
    if not oldest then return end
    local t = at(oldest)
    if t == nil or t >= now - max_age then break end
    redis.call('RPOP', list)
  end
  local newest = at(redis.call('LINDEX', list, 0))
  redis.call('PEXPIREAT', list, math.floor((math.min(newest or now, now) + max_age) * 1000))
end
