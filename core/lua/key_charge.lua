-- Check and charge an API key's characters for the day in one step, for an answer that makes
-- no job (a job's are charged by create_job.lua): concurrent requests never spend more than
-- the quota. The request's reporting tag counts them too, in the same step.
-- KEYS: counter, the day's count per reporting tag (or '': no tag)
-- ARGV: chars, limit (-1: none), ttl, tag -> {1, used after} or {0, used before}
local fits, used = charge_fits(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
if not fits then return {0, used} end
charge_tag(KEYS[2], ARGV[4], tonumber(ARGV[1]), tonumber(ARGV[3]))
return {1, charge_take(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[3]))}
