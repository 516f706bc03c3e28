-- Put a chunk a worker could not finish back in its backlog: at the front of its owner's (first
-- in line again), or, with ``due``, aside until then (a failure's backoff: no worker thread
-- waits it out). Nothing is put back for a chunk that finished meanwhile (it left its ledger)
-- or a job that will not run. A chunk of a job being cancelled that is still on its ledger was
-- in flight at the cancel: it goes back like any other and the cancel settles when a delivery
-- of it records (start_chunk.lua), never under another worker that may still run it.
-- KEYS: job, chunk ledger, in-flight starts, released, delayed, pending list, owner list, ring,
--       sizes, credit
-- ARGV: job_id, chunk, owner, ttl, due ('' : now)
-- -> 'backlog', 'delayed', or why nothing was put back ('done', the job's status, 'gone')
local job_id, chunk, owner = ARGV[1], ARGV[2], ARGV[3]
redis.call('HDEL', KEYS[4], job_id .. ':' .. chunk)
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'gone' end
if redis.call('HEXISTS', KEYS[2], chunk) == 0 then return 'done' end
if status ~= 'queued' and status ~= 'running' and status ~= 'cancelling' then return status end
redis.call('HDEL', KEYS[3], chunk)  -- not in flight any more
if ARGV[5] ~= '' then
  redis.call('ZADD', KEYS[5], tonumber(ARGV[5]), owner .. '|' .. job_id .. ':' .. chunk)
  return 'delayed'
end
backlog_add({KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]}, owner, job_id, {chunk},
  tonumber(ARGV[4]), true)
return 'backlog'
