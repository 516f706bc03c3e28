-- A no-trace job's final result was delivered (read once, or its webhook answered 2xx):
-- delete its texts and results, once. The job's hash stays, marked delivered_at and without its
-- document's name, until it expires as any job's (MT_RESULT_TTL_S), so a second read can say
-- what happened (410) rather than "not found"; its webhook event loses its body (which carried
-- the result), and its Idempotency-Key's record goes when it still names the job (a resend is a
-- new request). Two readers racing: the first to get here delivers, the other is told it was.
-- KEYS: job, webhook event, Idempotency-Key record (or ''), then every key of the job's data
--       to delete (results, ledger, deliveries, document, its rendering...)
-- ARGV: now, job id
-- -> 1 when this call delivered it, 0 when it was delivered already (or the job is gone)
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], 'delivered_at', ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[1], 'document_name')
for i = 4, #KEYS do redis.call('UNLINK', KEYS[i]) end
redis.call('HDEL', KEYS[2], 'body')
if KEYS[3] ~= '' then
  local named = redis.call('GET', KEYS[3])
  if named and string.sub(named, 1, #ARGV[2] + 1) == ARGV[2] .. ' ' then
    redis.call('DEL', KEYS[3])
  end
end
return 1
