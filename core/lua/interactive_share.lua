-- What an API key holds of the interactive lane (core/interactive.py): its interactive work
-- not done yet, read from each listed job's hash (lib.lua's share_held, which create_job.lua
-- checks a new job against); entries of jobs that ended leave.
-- KEYS: the key's interactive hash (keys.api_key_interactive)
-- ARGV: job key prefix (keys.job(''))
-- -> {segments held, jobs held}
local segments, jobs = share_held(KEYS[1], ARGV[1])
return {segments, jobs}
