-- Cancel a job that is not final yet.
-- KEYS: job, chunk ledger, every lane's active set...
-- ARGV: job_id, now, channel
-- -> the status after the call ('' when the job is gone)
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return '' end
if status == 'queued' or status == 'running' then
  finalize(KEYS[1], KEYS[2], 3, ARGV[1], 'cancelled', ARGV[2], ARGV[3])
  return 'cancelled'
end
return status
