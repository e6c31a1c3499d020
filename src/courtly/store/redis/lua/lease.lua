-- LEASE: ARGV[3] max leases, ARGV[4] ttl ms, ARGV[5] ahead ms. Reclaim expired leases
-- (their URL is still at the head of its queue), wake due inactive hosts into free
-- slots, then lease ready hosts, taking hosts in from the front tier while slots are
-- free (at most max(scan, 4 * max) front pops). The step runs as of now + ahead (the
-- scheduler's lease as of now_at + ahead_s: hosts due that soon are leased, their
-- request waits for their time); the reply head (now, next, due) is the server's own.
-- Returns the reply head, then per lease: host, token, entry, next allowed ms, state
-- payload.
local maxl, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local SERVER_NOW = NOW
NOW = NOW + math.max(0, tonumber(ARGV[5] or '0'))

local expired = redis.call('ZRANGEBYSCORE', P .. 'x', '-inf', NOW, 'LIMIT', 0, 256)
for _, host in ipairs(expired) do
  redis.call('ZREM', P .. 'x', host)
  redis.call('HDEL', P .. 'l', host)
  bs = bs + 1
  place(host, math.max(host_next(host), NOW))
end

if ac < SLOTS then
  local due = redis.call('ZRANGEBYSCORE', P .. 'w', '-inf', NOW, 'WITHSCORES', 'LIMIT', 0, SLOTS - ac)
  for j = 1, #due, 2 do
    redis.call('ZREM', P .. 'w', due[j])
    redis.call('SADD', P .. 'act', due[j])
    ac = ac + 1
    redis.call('ZADD', P .. 'r', due[j + 1], due[j])
  end
end

local function front_pop()
  if not skips then
    skips = {}
    for i = 1, LEVELS do skips[i] = tonumber(redis.call('HGET', M, 'sk' .. i) or '0') end
  end
  local sizes, total, chosen = {}, 0, nil
  for i = 1, LEVELS do
    sizes[i] = redis.call('LLEN', P .. 'f' .. (i - 1))
    if sizes[i] > 0 then
      total = total + WEIGHTS[i]
      if not chosen and skips[i] >= MAXSKIPS then chosen = i end
    end
  end
  if not chosen then
    local draw = math.random() * total
    for i = 1, LEVELS do
      if sizes[i] > 0 then
        chosen = i
        draw = draw - WEIGHTS[i]
        if draw < 0 then break end
      end
    end
  end
  for i = 1, LEVELS do
    if sizes[i] > 0 then skips[i] = skips[i] + 1 end
  end
  skips[chosen] = 0
  fs = fs - 1
  return redis.call('LPOP', P .. 'f' .. (chosen - 1))
end

local function take_from_front()
  local e = front_pop()
  local host = entry_host(e)
  if redis.call('HEXISTS', P .. 'bl', host) == 1 then
    back_insert(host, e, entry_rank(e))
    redis.call('HINCRBY', P .. 'bl', host, 1)
    bs = bs + 1
    return
  end
  local reason = redis.call('HGET', P .. 'hr', host)
  if reason then
    hq_add(host, -1)
    drop_entry(e, reason)
    return
  end
  redis.call('RPUSH', P .. 'b:' .. host, e)
  redis.call('HSET', P .. 'bl', host, 1)
  bs = bs + 1
  place(host, host_next(host))
end

local out = {}
local n = 0
local scan = math.max(SCAN, 4 * maxl)
while n < maxl do
  local head = redis.call('ZRANGE', P .. 'r', 0, 0, 'WITHSCORES')
  if #head > 0 and tonumber(head[2]) <= NOW then
    local host = head[1]
    redis.call('ZREM', P .. 'r', host)
    bs = bs - 1
    tok = tok + 1
    local token = string.format('%.0f', tok * NSHARDS + SHARD)
    redis.call('HSET', P .. 'l', host, token)
    redis.call('ZADD', P .. 'x', NOW + ttl, host)
    out[#out + 1] = host
    out[#out + 1] = token
    out[#out + 1] = redis.call('LINDEX', P .. 'b:' .. host, 0)
    out[#out + 1] = fmt(host_next(host))
    out[#out + 1] = redis.call('HGET', P .. 'hs', host) or ''
    n = n + 1
  elseif scan > 0 and ac < SLOTS and fs > 0 then
    scan = scan - 1
    take_from_front()
  else
    break
  end
end

-- the shard's next and due times as of the server's own now, whatever this caller's
-- ahead: the index they go to serves every caller (the store puts a caller's next
-- ready time no earlier than its now + ahead)
NOW = SERVER_NOW
local nxt, due = next_times(scan == 0)
finish()
return reply(nxt, due, out)
