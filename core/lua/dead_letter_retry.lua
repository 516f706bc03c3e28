-- Retry a dead-lettered chunk (`mtfleet dead-letters retry`): its dead-lettered segments are
-- pending again (their failures leave the results and the job's counters; a result another
-- delivery wrote stays), its delivery counts start again, it is back on its job's ledger and
-- at the front of its owner's backlog (lib.lua backlog_add, as a requeue), and its entry leaves
-- the list. A job that had ended runs again (lib.lua reopen). Not for a job that is gone, being
-- cancelled or cancelled, or that failed as a whole (its ``error``).
-- KEYS: job, results, chunk ledger, deliveries, in-flight starts, dead chunks, dead-letter
--       list, the job's active set (or ''), webhook event, webhooks due, the backlog's pending
--       list, owner list, ring, sizes, credit
-- ARGV: job_id, chunk, entry (as listed), owner
-- -> {outcome, segments pending again}: 'requeued'; 'done' (nothing of it is left to do: the
--    entry leaves); 'gone', 'no_message' (its message is not kept), or the job's status
local job_id, chunk = ARGV[1], ARGV[2]
local job = redis.call('HMGET', KEYS[1], 'status', 'error')
local status = job[1]
if not status then return {'gone', 0} end
if status == 'cancelling' or status == 'cancelled' or (status == 'failed' and job[2]) then
  return {status, 0}
end
local message = redis.call('HGET', KEYS[6], chunk) or redis.call('HGET', KEYS[3], chunk)
local ok, msg = pcall(cjson.decode, message or '')
if not ok or type(msg) ~= 'table' or type(msg['segments']) ~= 'table' then
  return {'no_message', 0}
end
local fields = {}
for _, seg in ipairs(msg['segments']) do
  for _, index in ipairs(seg['indices'] or {}) do fields[#fields + 1] = tostring(index) end
end
local dead = {}
for b = 1, #fields, UNPACK_MAX do
  local last = math.min(b + UNPACK_MAX - 1, #fields)
  local got = redis.call('HMGET', KEYS[2], unpack(fields, b, last))
  for k = 1, #got do
    if got[k] then
      local okr, outcome = pcall(cjson.decode, got[k])
      if okr and type(outcome) == 'table' and type(outcome['error']) == 'table'
          and outcome['error']['type'] == 'dead_lettered' then
        dead[#dead + 1] = fields[b + k - 1]
      end
    end
  end
end
if #dead == 0 and redis.call('HEXISTS', KEYS[3], chunk) == 0 then
  redis.call('HDEL', KEYS[6], chunk)
  redis.call('LREM', KEYS[7], 1, ARGV[3])
  return {'done', 0}
end
for b = 1, #dead, UNPACK_MAX do
  redis.call('HDEL', KEYS[2], unpack(dead, b, math.min(b + UNPACK_MAX - 1, #dead)))
end
if #dead > 0 then redis.call('HINCRBY', KEYS[1], 'failed', -#dead) end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('HSET', KEYS[3], chunk, message)
if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
redis.call('HDEL', KEYS[6], chunk)
redis.call('HDEL', KEYS[4], chunk, 'resent:' .. chunk, 'dead-lettered:' .. chunk)
redis.call('HDEL', KEYS[5], chunk)
if status ~= 'queued' and status ~= 'running' then
  reopen(KEYS[1], KEYS[8], job_id, KEYS[9], KEYS[10])
end
backlog_add({KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15]}, ARGV[4], job_id, {chunk},
  math.max(1, math.ceil(ttl / 1000)), true)
redis.call('LREM', KEYS[7], 1, ARGV[3])
return {'requeued', #dead}
