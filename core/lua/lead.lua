-- Hold a lease for one holder at a time: take it when nobody holds it, or extend it when the
-- caller does; one step (a GET then a PEXPIRE could extend a lease taken over in between).
-- KEYS: the lease
-- ARGV: holder, ttl in ms
-- -> 1 when the caller holds it now, else 0
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', tonumber(ARGV[2])) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 1
end
return 0
