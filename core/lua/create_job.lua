-- Store a new job, paid for, in one step: its hash, the results known at once, its chunk
-- ledger, a document job's file, its Idempotency-Key's record, its owner's characters for the
-- day and its share of the interactive lane; or nothing at all, when the Idempotency-Key names a
-- job already (a replay is charged nothing) or the owner's quota, interactive share or storage
-- would be passed. A request has its job and paid for it, or has neither.
-- Its chunks join the backlog of its owner in its pool and lane in the same step, so a job is
-- never stored without its work being somewhere (core/backlog.py releases them to the broker).
-- KEYS: job, results, idempotency key (or ''), chunk ledger, the job's pool and lane's active set,
--       document (or ''), the owner's storage set and storage hash (or '' and ''),
--       webhook event (or '': the job is not final, or has no callback_url), webhooks due,
--       the backlog's pending list, owner list, ring, sizes, credit (or '' x5: no chunks),
--       the owner's characters for the day (or '': not charged), the owner's interactive hash
--       (or '': the job holds no share of the interactive lane), the owner's characters for the
--       day per reporting tag (or '': the request has no tag)
-- ARGV: ttl, idempotency ttl, idempotency value, n_meta, n_results, created_at,
--       bytes the job stores, the owner's storage limit (-1: none), document (base64, or ''),
--       job id, owner, characters charged, the day's limit (-1: none), the count's ttl,
--       job key prefix (keys.job('')), the job's interactive segments, the share's segment
--       limit, job limit and ttl, the reporting tag, meta field/value pairs (n_meta values),
--       results index/json pairs (n_results values), ledger chunk/message pairs (the rest, in
--       chunk order)
-- -> false when created, the idempotency key's earlier value, or what refused it:
--    {"quota", characters used}, {"share", segments held, jobs held}, {"storage", bytes in use}
local ttl = tonumber(ARGV[1])
local now = tonumber(ARGV[6])
if KEYS[3] ~= '' then
  local existing = redis.call('GET', KEYS[3])
  if existing then return existing end
end
local job_id = ARGV[10]
local chars = tonumber(ARGV[12])
if KEYS[16] ~= '' then
  local fits, used = charge_fits(KEYS[16], chars, tonumber(ARGV[13]))
  if not fits then return {'quota', used} end
end
local asked = tonumber(ARGV[16])
if KEYS[17] ~= '' then
  local segments, jobs = share_held(KEYS[17], ARGV[15])
  if jobs > 0 and (segments + asked > tonumber(ARGV[17]) or jobs + 1 > tonumber(ARGV[18])) then
    return {'share', segments, jobs}
  end
end
if KEYS[7] ~= '' then
  local used = storage_reserve(KEYS[7], KEYS[8], job_id, tonumber(ARGV[7]), now + ttl, now,
    tonumber(ARGV[8]))
  if used then return {'storage', used} end
end
-- nothing refuses it: everything is written from here on
if KEYS[16] ~= '' then
  charge_take(KEYS[16], chars, tonumber(ARGV[14]))
  charge_tag(KEYS[18], ARGV[20], chars, tonumber(ARGV[14]))
end
if KEYS[17] ~= '' then
  redis.call('HSET', KEYS[17], job_id, asked .. ' ' .. ARGV[6])
  redis.call('EXPIRE', KEYS[17], tonumber(ARGV[19]))
end
if KEYS[3] ~= '' then redis.call('SET', KEYS[3], ARGV[3], 'EX', tonumber(ARGV[2])) end
if KEYS[6] ~= '' then redis.call('SET', KEYS[6], ARGV[9], 'EX', ttl) end
local n_meta, n_results = tonumber(ARGV[4]), tonumber(ARGV[5])
local first = 21
hset_pairs(KEYS[1], first, first + n_meta - 1)
redis.call('EXPIRE', KEYS[1], ttl)
first = first + n_meta
if n_results > 0 then
  hset_pairs(KEYS[2], first, first + n_results - 1)
  redis.call('EXPIRE', KEYS[2], ttl)
end
first = first + n_results
if #ARGV >= first then
  hset_pairs(KEYS[4], first, #ARGV)
  redis.call('EXPIRE', KEYS[4], ttl)
  redis.call('ZADD', KEYS[5], now, job_id)
  if KEYS[11] ~= '' then
    local chunks = {}
    for i = first, #ARGV, 2 do chunks[#chunks + 1] = ARGV[i] end
    backlog_add({KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15]}, ARGV[11], job_id, chunks,
      ttl, false)
  end
end
-- a job answered whole at submission is final now: its webhook event goes with it
outbox_add(KEYS[1], KEYS[9], KEYS[10], job_id, ARGV[6])
return false
