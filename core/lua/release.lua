-- Release chunks of a pool lane from its backlog to the broker, until ``target`` are out there
-- (in the broker queue, or released and not started): the chunks whose failure backoff is over first, then the owners in turn,
-- each for as many chunks as its weight (deficit round robin, a chunk the unit; a turn cut
-- short by the target resumes at the next release), each owner's jobs in the order they came.
-- A chunk whose job will not run any more (cancelled, failed, expired), or that is finished
-- already (off its ledger), is dropped on the way.
-- KEYS: ring, sizes, credit, released, delayed, broker queue
-- ARGV: owner list prefix, job key prefix, ledger suffix, pending suffix, api key prefix,
--       now, target, most steps
-- -> job_id, chunk, owner, message (JSON, as the ledger holds it) of each chunk released, in
--    order, flat: the caller publishes them
local ring, sizes, credit, released, delayed = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now = ARGV[6]
-- what is out already: in the broker queue, or released and not started yet (being published,
-- or fetched by a worker that has not begun it); the larger of the two counts
local budget = tonumber(ARGV[7]) - math.max(redis.call('LLEN', KEYS[6]), redis.call('HLEN', released))
local steps = tonumber(ARGV[8])
local out = {}

-- the message of a chunk that may still run (on its ledger: a cancelling job's only are those
-- in flight at the cancel, put back since), or nil
local function payload(job_id, chunk)
  local status = redis.call('HGET', ARGV[2] .. job_id, 'status')
  if status ~= 'queued' and status ~= 'running' and status ~= 'cancelling' then return nil end
  return redis.call('HGET', ARGV[2] .. job_id .. ARGV[3], chunk)
end

local function hand_over(owner, job_id, chunk, message)
  redis.call('HSET', released, job_id .. ':' .. chunk, owner .. '|' .. now)
  out[#out + 1] = job_id
  out[#out + 1] = chunk
  out[#out + 1] = owner
  out[#out + 1] = message
  budget = budget - 1
end

if budget > 0 then
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', delayed, '-inf', now, 'LIMIT', 0, budget)) do
    redis.call('ZREM', delayed, member)
    local owner, job_id, chunk = string.match(member, '^(.-)|(%x+):(%d+)$')
    local message = job_id and payload(job_id, chunk)
    if message then hand_over(owner, job_id, chunk, message) end
  end
end

while budget > 0 and steps > 0 do
  steps = steps - 1
  local owner = redis.call('LINDEX', ring, 0)
  if not owner then break end
  local olist = ARGV[1] .. (owner == '' and '-' or owner)
  local job_id = redis.call('LINDEX', olist, 0)
  if not job_id then
    -- nothing of the owner's waits: it leaves the turns
    redis.call('LPOP', ring)
    redis.call('HDEL', sizes, owner)
    redis.call('HDEL', credit, owner)
  else
    local pending = ARGV[2] .. job_id .. ARGV[4]
    local chunk = redis.call('LPOP', pending)
    if not chunk or redis.call('LLEN', pending) == 0 then redis.call('LPOP', olist) end
    local rotate = false
    if chunk then
      if redis.call('HINCRBY', sizes, owner, -1) <= 0 then redis.call('HDEL', sizes, owner) end
      local message = payload(job_id, chunk)
      if message then
        hand_over(owner, job_id, chunk, message)
        local left = tonumber(redis.call('HGET', credit, owner) or '0')
        if left <= 0 then
          left = 1
          if owner ~= '' then
            left = math.max(1, math.floor(tonumber(
              redis.call('HGET', ARGV[5] .. owner, 'weight') or '1') or 1))
          end
        end
        left = left - 1
        if left <= 0 then
          redis.call('HDEL', credit, owner)
          rotate = true
        else
          redis.call('HSET', credit, owner, left)
        end
      end
    end
    if redis.call('LLEN', olist) == 0 then
      redis.call('LPOP', ring)
      redis.call('HDEL', sizes, owner)
      redis.call('HDEL', credit, owner)
    elseif rotate then
      redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
    end
  end
end
return out
