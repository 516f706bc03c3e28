-- Trim the dead-letter list to its bounds (lib.lua dead_letters_trim) before it is read.
-- KEYS: dead-letter list
-- ARGV: now, most entries, most age (s)
-- -> the entries left
dead_letters_trim(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
return redis.call('LLEN', KEYS[1])
