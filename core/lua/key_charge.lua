-- Check and charge an API key's characters for the day in one step, for an answer that makes
-- no job (a job's are charged by create_job.lua): concurrent requests never spend more than
-- the quota.
-- KEYS: counter   ARGV: chars, limit (-1: none), ttl -> {1, used after} or {0, used before}
local fits, used = charge_fits(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
if not fits then return {0, used} end
return {1, charge_take(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[3]))}
