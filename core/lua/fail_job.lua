-- Fail a whole job that cannot run at all, and free its Idempotency-Key (if it still names
-- this job) so that a retry makes a new job; a job the caller was told was not accepted gives
-- its characters back in the same step (it was charged when it was stored).
-- KEYS: job, idempotency key (or ''), chunk ledger, the job's active set (or ''), webhook
--       event (or '': no webhook: the client was told the job was not accepted), webhooks due,
--       the backlog's pending list, owner list, ring, sizes, credit (or '' x5),
--       the day's character count it was charged to (or '': nothing to give back), the
--       day's count per reporting tag it was charged to (or '': none)
-- ARGV: job_id, now, channel, error json, owner, characters to give back, its reporting tag
-- -> the status before the call (false when the job is gone)
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'queued' or status == 'running' then
  if KEYS[7] ~= '' then
    backlog_drop({KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]}, ARGV[5], ARGV[1])
  end
  finalize(KEYS[1], KEYS[3], KEYS[4], ARGV[1], 'failed', ARGV[2], ARGV[3], {'error', ARGV[4]},
    {KEYS[5], KEYS[6]})
end
if KEYS[2] ~= '' then
  local v = redis.call('GET', KEYS[2])
  if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
end
if KEYS[12] ~= '' then
  redis.call('DECRBY', KEYS[12], tonumber(ARGV[6]))
  charge_tag(KEYS[13], ARGV[7], -tonumber(ARGV[6]), 0)
end
return status
