-- Claim webhook events that are due, fairly between API keys: the keys with an event due take
-- turns (the one whose turn came first, then the others in order, one event each a round), a
-- key with its share of the caller's slots in use is passed over (it keeps its place), and each
-- event claimed is leased to the caller: its due time moves to the end of the lease, so an event
-- whose deliverer dies mid-attempt is due again after it. A key served goes to the back of the
-- turns (now) while it has more due, else to its next event's due time; a key with none leaves.
-- KEYS: the keys' turns (keys.WEBHOOKS_DUE; each key's events in keys.webhooks_due)
-- ARGV: now, lease seconds, most to claim, a key's share of the caller's slots, then a
--       (key, its events in flight at the caller) pair per key with any
-- -> job id, key of each event claimed, flat
local turns = KEYS[1]
local now, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local most, share = tonumber(ARGV[3]), tonumber(ARGV[4])
local busy, full = {}, 0
for i = 5, #ARGV, 2 do
  busy[ARGV[i]] = tonumber(ARGV[i + 1])
  if busy[ARGV[i]] >= share then full = full + 1 end
end
local out = {}
local claimed, steps = 0, 1000  -- at most this many turns looked at: a bounded step
local moved = true
while moved and claimed < most and steps > 0 do
  moved = false
  local due_keys = redis.call('ZRANGEBYSCORE', turns, '-inf', now, 'LIMIT', 0, most - claimed + full)
  for _, owner in ipairs(due_keys) do
    if claimed >= most or steps <= 0 then break end
    steps = steps - 1
    if (busy[owner] or 0) < share then
      local events = webhook_events(turns, owner)
      local due = redis.call('ZRANGEBYSCORE', events, '-inf', now, 'LIMIT', 0, 1)[1]
      if due then
        redis.call('ZADD', events, now + lease, due)
        out[#out + 1] = due
        out[#out + 1] = owner
        claimed = claimed + 1
        busy[owner] = (busy[owner] or 0) + 1
        if busy[owner] >= share then full = full + 1 end
      end
      local next_event = redis.call('ZRANGE', events, 0, 0, 'WITHSCORES')
      if next_event[1] then
        redis.call('ZADD', turns, math.max(tonumber(next_event[2]), now), owner)
      else
        redis.call('ZREM', turns, owner)
      end
      moved = true
    end
  end
end
return out
