-- LEASE: ARGV[3] max leases, ARGV[4] ttl ms, ARGV[5] ahead ms: the scheduler's lease
-- (courtly.store.scheduler.Scheduler.lease), step for step, over the shard's rows.
-- Reclaim expired leases (their URL is still in its queue: back to the head of its rank,
-- reseat_head; the host goes back to a heap at max(next allowed, now)), wake due inactive
-- hosts into free slots, move the ready hosts whose time has come into the due set d
-- (ripen), then lease: an aged host first (is_aged, the oldest), else the best head, then
-- the one due longest; while the front tier's best level is better than every due head
-- (and fewer than 2 hosts per lease asked for are due: DUE_FOR_BREADTH, decided once per
-- call), or no host is due, take hosts in from the front tier while slots are free (at
-- most max(scan, 4 * max) front pops). The step runs as of now + ahead (the scheduler's
-- lease as of now_at + ahead_s: hosts due that soon are leased, their request waits for
-- their time); the reply head (now, next, due, offer) is the server's own.
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
  reseat_head(host)
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

-- Scheduler._ripen: ready hosts whose time has come go into d, keyed by their head rank
-- and time, and into the ageing queue da by the time they are due since (their time, or
-- when they were placed if later: pa). At most RIPEN per call; the rest stay in r, due,
-- for the next call (next_times reports the shard due).
local RIPEN = 1024
local function ripen()
  local due = redis.call('ZRANGEBYSCORE', P .. 'r', '-inf', NOW, 'WITHSCORES', 'LIMIT', 0, RIPEN)
  if #due == 0 then return end
  redis.call('ZREMRANGEBYRANK', P .. 'r', 0, #due / 2 - 1)
  for j = 1, #due, 2 do
    local host, at = due[j], tonumber(due[j + 1])
    local since = at
    local placed = redis.call('HGET', P .. 'pa', host)
    if placed then
      redis.call('HDEL', P .. 'pa', host)
      since = math.max(at, tonumber(placed))
    end
    local rank = entry_rank(redis.call('LINDEX', P .. 'b:' .. host, 0))
    redis.call('ZADD', P .. 'd', rank * RSPAN + at, host)
    redis.call('ZADD', P .. 'da', since, host)
  end
end

-- Scheduler._aged: the host due longest, if it is aged (is_aged: now - since >
-- max_due_wait), else nil; entries of hosts no longer due are dropped on the way.
local function aged()
  if MAXWAIT < 0 then return nil end
  while true do
    local oldest = redis.call('ZRANGE', P .. 'da', 0, 0, 'WITHSCORES')
    if #oldest == 0 then return nil end
    if redis.call('ZSCORE', P .. 'd', oldest[1]) then
      if NOW - tonumber(oldest[2]) > MAXWAIT then return oldest[1] end
      return nil
    end
    redis.call('ZREM', P .. 'da', oldest[1])
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

-- Scheduler._best_due: d's best entry ({host, score}) due by NOW, left in place, or {};
-- a host due after NOW (ripened by a LEASE that ran further ahead: another fetcher's,
-- leasing further ahead) goes back to r, so no LEASE hands out a host before its time
-- less its own ahead. (Compared as scores, rank * RSPAN + time, rounded alike.)
local function best_due()
  while true do
    local best = redis.call('ZRANGE', P .. 'd', 0, 0, 'WITHSCORES')
    if #best == 0 then return best end
    local score = tonumber(best[2])
    local rank = due_rank(score)
    if score <= rank * RSPAN + NOW then return best end
    local host = best[1]
    local at = score - rank * RSPAN
    local since = redis.call('ZSCORE', P .. 'da', host)
    redis.call('ZREM', P .. 'd', host)
    redis.call('ZREM', P .. 'da', host)
    if since and tonumber(since) > at then redis.call('HSET', P .. 'pa', host, since) end
    redis.call('ZADD', P .. 'r', at, host)
  end
end

-- Scheduler._take_from_front: one front URL into its host's back queue at its rank (or
-- its hinted rank, if better), holding the host if it is new.
local function take_from_front()
  local e = front_pop()
  local host = entry_host(e)
  local rank = entry_rank(e)
  local hinted = take_hint(entry_url(e))
  if hinted and hinted < rank then
    rank = hinted
    e = with_rank(e, rank)
  end
  if redis.call('HEXISTS', P .. 'bl', host) == 1 then
    back_insert(host, e, rank)
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

ripen()
local out = {}
local n = 0
local scan = math.max(SCAN, 4 * maxl)
-- a better front level goes before due heads only while few hosts are due
-- (DUE_FOR_BREADTH = 2 per lease asked for), decided once per call
local better_first = redis.call('ZCARD', P .. 'd') < 2 * math.max(1, maxl)
while n < maxl do
  local best = best_due()
  local took = false
  if scan > 0 and ac < SLOTS and (better_first or n == 0) then
    local level = front_best_level()
    if level and (#best == 0 or (better_first and rank_of(level) < due_rank(tonumber(best[2])))) then
      scan = scan - 1
      take_from_front()
      ripen()
      took = true
    end
  end
  if not took then
    if #best == 0 then break end
    local host = aged() or best[1]
    redis.call('ZREM', P .. 'd', host)
    redis.call('ZREM', P .. 'da', host)
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
  end
end

-- the shard's next and due times as of the server's own now, whatever this caller's
-- ahead: the index they go to serves every caller (the store puts a caller's next
-- ready time no earlier than its now + ahead)
NOW = SERVER_NOW
local nxt, due = next_times(scan == 0)
finish()
return reply(nxt, due, out)
