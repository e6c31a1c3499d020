-- The shard prelude: every shard script starts with this text (the store joins them).
--
-- KEYS[1] is the shard's meta hash "<crawl>:{<crawl>.<s>}:m"; every other key the
-- script touches is built from the same prefix, so one call touches one slot.
-- ARGV[1]: "NOW [CALL KEEP [DONE]]". NOW: now in ms, or a negative number for the
-- server's TIME (the only clock of a crawl: the caller's own "now" is used by the
-- contract tests only). CALL (the scripts that write): the call's id, the same each
-- time the caller sends that call again; KEEP: how long its reply is kept (ms); DONE:
-- comma-separated ids of the caller's earlier calls on this shard whose replies came
-- back (their kept replies are dropped).
-- ARGV[2]: "shard shards seed slots inactive_ms scan max_skips bloom_cap bloom_err
-- max_due_wait_ms hint_cap breadth w0 w1 ..." (max_due_wait_ms -1: no ageing; breadth: see
-- offer)
-- ARGV[3...]: the operation's own arguments.
local P = string.sub(KEYS[1], 1, -2)
local M = KEYS[1]
-- While the shard's slot migrates between nodes (redis-cli --cluster reshard), keys
-- the script did not declare may already sit on the other node: a call would fail
-- half-way, its writes made. A two-key EXISTS fails on either node of a migrating
-- slot (TRYAGAIN / non-local key) and on no stable slot, so the script stops here,
-- before any write, and the store calls again (docs/distributed.md, resharding).
local probe = redis.pcall('EXISTS', M, P .. 'probe')
if type(probe) == 'table' and probe.err then return {'moving'} end
-- A call sent again (its reply was lost: a connection dropped under it, a socket
-- timeout, the cluster client closing its connections to refresh its slot map) gets
-- the reply of its first run, which it made: run twice, an ADD would call its own URLs
-- seen, a LEASE would lease more, a COMPLETE would find itself fenced.
local A = {}
for v in string.gmatch(ARGV[1], '%S+') do A[#A + 1] = v end
local CALL, KEEP = A[2], A[3]
if CALL then
  if A[4] then
    local done = {}
    for id in string.gmatch(A[4], '[^,]+') do done[#done + 1] = P .. 'rp:' .. id end
    redis.call('DEL', unpack(done))
  end
  local kept = redis.call('GET', P .. 'rp:' .. CALL)
  if kept then return cmsgpack.unpack(kept) end
end
local NOW = tonumber(A[1])
if NOW < 0 then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local C = {}
for v in string.gmatch(ARGV[2], '%S+') do C[#C + 1] = tonumber(v) end
local SHARD, NSHARDS, SLOTS, INACTIVE, SCAN, MAXSKIPS = C[1], C[2], C[4], C[5], C[6], C[7]
local BCAP, BERR = C[8], C[9]
local MAXWAIT, HINTCAP = C[10], C[11]  -- QueueConfig.max_due_wait_s (ms, -1: off); MAX_HINTS
local BREADTH = C[12]
math.randomseed(C[3])
local WEIGHTS = {}
for i = 13, #C do WEIGHTS[#WEIGHTS + 1] = C[i] end
local LEVELS = #WEIGHTS

-- counters of the shard, read once and written back by finish()
local meta = redis.call('HMGET', M, 'fs', 'bs', 'ac', 'tok', 'req', 'ret', 'ver', 'co')
local fs = tonumber(meta[1] or '0')   -- URLs in the front tier
local bs = tonumber(meta[2] or '0')   -- URLs in back queues, leased heads excluded
local ac = tonumber(meta[3] or '0')   -- active hosts (holding a slot)
local tok = tonumber(meta[4] or '0')  -- lease counter (token = tok * shards + shard)
local req = tonumber(meta[5] or '0')  -- requests made by the shard's hosts
local ret = tonumber(meta[6] or '0')  -- hosts retired
local ver = tonumber(meta[7] or '0') + 1  -- state version, for the due index
local co = tonumber(meta[8] or '0')   -- last catalogue order score
local skips = nil                      -- front-level skip counters, read on first use
-- the seen-set's layer count and per-layer insert counts (bl, bc<L>), read on first use;
-- the counts and the seen total are written back by finish() (one write per call, not
-- two per new URL)
local bloom = nil

local function fmt(x) return string.format('%.17g', x) end

local function finish()
  local args = {'HSET', M, 'fs', fs, 'bs', bs, 'ac', ac, 'tok', string.format('%.0f', tok),
    'req', req, 'ret', ret, 'ver', ver, 'co', string.format('%.0f', co)}
  if skips then
    for i = 1, LEVELS do args[#args + 1] = 'sk' .. i; args[#args + 1] = skips[i] end
  end
  if bloom and bloom.added > 0 then
    for L, count in pairs(bloom.counts) do args[#args + 1] = 'bc' .. L; args[#args + 1] = count end
  end
  redis.call(unpack(args))
  if bloom and bloom.added > 0 then redis.call('HINCRBY', M, 'seen', bloom.added) end
end

-- queue entries: "<depth> <url>", or "<depth>@<host> <url>" when the host key is not
-- the URL's authority; a back-queue head whose attempts failed reads "<depth>!<n>...";
-- "^<rank>" after the depth (and attempts) is the entry's rank (see back_insert)
local function entry_url(e) return string.sub(e, string.find(e, ' ', 1, true) + 1) end
local function entry_depth(e) return string.match(e, '^(%d+)') end
local function entry_host(e)
  local sp = string.find(e, ' ', 1, true)
  local at = string.find(e, '@', 1, true)
  if at and at < sp then return string.sub(e, at + 1, sp - 1) end
  local s = string.find(e, '://', sp + 1, true) + 3
  local slash = string.find(e, '/', s, true)
  if slash then return string.sub(e, s, slash - 1) end
  return string.sub(e, s)
end

-- ranks (courtly.store.scheduler: a back queue is ordered by rank, then arrival): 0 the
-- news lane (a revisit at level 0), 1 + level any other URL. An entry carries its rank
-- from ADD on, in the front tier too: "<depth>[!<n>]^<rank>[@<host>] <url>". An entry
-- without one (queued before ranks were kept) reads as the worst rank.
local function entry_rank(e)
  local r = string.match(e, '^%d+!?%d*%^(%d+)')
  if r then return tonumber(r) end
  return LEVELS
end
local function with_rank(e, rank)
  local head, rest = string.match(e, '^(%d+!?%d*)(.*)$')
  rest = string.gsub(rest, '^%^%d+', '', 1)
  return head .. '^' .. rank .. rest
end
local function rank_of(level) return 1 + math.min(math.max(level, 0), LEVELS - 1) end

-- the catalogue: c (url -> payload), cr (url -> first referrer), co (url by first write)
local function cat_order(url)
  co = math.max(co + 1, math.floor(NOW) * 1024)
  redis.call('ZADD', P .. 'co', co, url)
end
-- a refusal (a skip reason, no status, no fail reason) never replaces a fetched page's
-- entry (courtly.archive.catalogue.replaces); payloads are the codec's JSON or "D..."
local function refusal(payload)
  if string.sub(payload, 1, 1) == 'D' then return string.find(payload, ' ', 1, true) ~= nil end
  return string.find(payload, '"skip_reason":', 1, true) ~= nil
    and not string.find(payload, '"status":', 1, true)
    and not string.find(payload, '"fail_reason":', 1, true)
end
local function cat_put(url, payload, referrer)
  if refusal(payload) then
    local old = redis.call('HGET', P .. 'c', url)
    if old and string.find(old, '"status":', 1, true) then return end
  end
  if redis.call('HSET', P .. 'c', url, payload) == 1 then cat_order(url) end
  if referrer ~= '' then redis.call('HSETNX', P .. 'cr', url, referrer) end
end
local function cat_found(url, payload, referrer)
  if redis.call('HSETNX', P .. 'c', url, payload) == 1 then
    cat_order(url)
    if referrer ~= '' then redis.call('HSETNX', P .. 'cr', url, referrer) end
  end
end
-- records (url, payload, referrer) at ARGV[base...]; a referrer that starts with "\0"
-- marks a discovery: written only if the URL has no entry yet
local function cat_records(base, count)
  for i = base, base + 3 * count - 1, 3 do
    local referrer = ARGV[i + 2]
    if string.byte(referrer, 1) == 0 then cat_found(ARGV[i], ARGV[i + 1], string.sub(referrer, 2))
    else cat_put(ARGV[i], ARGV[i + 1], referrer) end
  end
  return base + 3 * count
end
local function drop_entry(e, reason)
  cat_put(entry_url(e), 'D' .. entry_depth(e) .. ' host_retired:' .. reason, '')
end

-- the seen-set: a scalable Bloom filter; layer L holds BCAP * 2^L URLs at a false
-- positive rate of BERR / 2^(L+1), so the rates of all layers sum below BERR
local LN2 = math.log(2)
local LAYER = {}  -- layer(L), computed once per call
local function layer(L)
  local got = LAYER[L]
  if got then return got[1], got[2], got[3] end
  local cap = BCAP * 2 ^ L
  local m = math.ceil(-cap * math.log(BERR / 2 ^ (L + 1)) / (LN2 * LN2))
  local k = math.max(1, math.floor(m / cap * LN2 + 0.5))
  LAYER[L] = {cap, m, k}
  return cap, m, k
end
local function bits(op, key, h1, h2, m, k)
  local args = {op, key}
  for i = 0, k - 1 do
    args[#args + 1] = (op == 'BITFIELD_RO') and 'GET' or 'SET'
    args[#args + 1] = 'u1'
    args[#args + 1] = (h1 + i * h2) % m
    if op == 'BITFIELD' then args[#args + 1] = 1 end
  end
  return redis.call(unpack(args))
end
local function bloom_count(L)
  local count = bloom.counts[L]
  if count == nil then
    count = tonumber(redis.call('HGET', M, 'bc' .. L) or '0')
    bloom.counts[L] = count
  end
  return count
end
local function seen_add(h1, h2)
  if not bloom then
    bloom = {layers = tonumber(redis.call('HGET', M, 'bl') or '1'), counts = {}, added = 0}
  end
  local layers = bloom.layers
  for L = 0, layers - 1 do
    local _, m, k = layer(L)
    local got = bits('BITFIELD_RO', P .. 's' .. L, h1, h2, m, k)
    local all = true
    for i = 1, k do
      if got[i] == 0 then all = false; break end
    end
    if all then return false end
  end
  local L = layers - 1
  local cap, m, k = layer(L)
  if bloom_count(L) >= cap then
    L = layers
    bloom.layers = layers + 1
    redis.call('HSET', M, 'bl', layers + 1)
    cap, m, k = layer(L)
  end
  bits('BITFIELD', P .. 's' .. L, h1, h2, m, k)
  bloom.counts[L] = bloom_count(L) + 1
  bloom.added = bloom.added + 1
  return true
end

-- hosts: hn (next allowed ms), hs (opaque state), hr (retired reason), hq (URLs queued,
-- front and back, leased head included), fail (hosts waiting because of failures)
local function host_next(host) return tonumber(redis.call('HGET', P .. 'hn', host) or '0') end
local function hq_add(host, n)
  if n ~= 0 and redis.call('HINCRBY', P .. 'hq', host, n) <= 0 then
    redis.call('HDEL', P .. 'hq', host)
  end
end

-- held hosts: bl (host -> back queue length, leased head included), act (active hosts),
-- r (ready heap of active unleased hosts), w (wake heap of inactive hosts),
-- l (host -> current lease token), x (host -> lease expiry ms)
--
-- The due set (courtly.store.scheduler's due heap, Scheduler._push_due and _ripen): the
-- active unleased hosts whose time has come leave r for d (host -> head rank * RSPAN +
-- their time, ms), so d's first member is the best head, then the one due longest; da
-- (host -> due since, ms) is the ageing queue (Scheduler._due_order): the oldest there
-- goes first once is_aged; pa (host -> ms it was placed) keeps Scheduler's placed_at
-- for a host placed after its time (due since then, not since its stale time).
local RSPAN = 17592186044416  -- 2^44 ms (557 years): a time in ms stays below it
local function due_rank(score) return math.floor(score / RSPAN) end

local function place(host, at)
  if at < NOW then redis.call('HSET', P .. 'pa', host, fmt(NOW)) end
  if at - NOW <= INACTIVE then
    local active = redis.call('SISMEMBER', P .. 'act', host) == 1
    if not active and ac < SLOTS then
      redis.call('SADD', P .. 'act', host)
      ac = ac + 1
      active = true
    end
    if active then
      redis.call('ZADD', P .. 'r', at, host)
      return
    end
  elseif redis.call('SREM', P .. 'act', host) == 1 then
    ac = ac - 1
  end
  redis.call('ZADD', P .. 'w', at, host)
end

local function let_go(host)
  if redis.call('SREM', P .. 'act', host) == 1 then ac = ac - 1 end
  redis.call('HDEL', P .. 'bl', host)
  redis.call('HDEL', P .. 'pa', host)
end

-- A due host whose head rank improved (a better URL inserted or promoted) moves up in d
-- with the same time (Scheduler._appended's push again).
local function rerank_due(host)
  local score = redis.call('ZSCORE', P .. 'd', host)
  if not score then return end
  score = tonumber(score)
  local old = due_rank(score)
  local rank = entry_rank(redis.call('LINDEX', P .. 'b:' .. host, 0))
  if rank < old then redis.call('ZADD', P .. 'd', rank * RSPAN + (score - old * RSPAN), host) end
end

local function requeue(host)
  local reason = redis.call('HGET', P .. 'hr', host)
  if reason then
    ret = ret + 1
    local key = P .. 'b:' .. host
    local dropped = redis.call('LRANGE', key, 0, -1)
    redis.call('DEL', key)
    bs = bs - #dropped
    hq_add(host, -#dropped)
    for _, e in ipairs(dropped) do drop_entry(e, reason) end
    let_go(host)
  elseif tonumber(redis.call('HGET', P .. 'bl', host) or '0') > 0 then
    place(host, host_next(host))
  else
    let_go(host)
  end
end

-- A back queue b:<host> is ordered by rank, then arrival (the scheduler's QueueRows):
-- an entry joins the tail of its rank, before the first entry of a worse rank, never
-- before a leased head (it stays at index 0 until COMPLETE pops it or RELEASE keeps it).
-- O(1) when nothing queued is worse (the common case), else a binary search over the
-- host's queue (O(log n) LINDEX). LEASE's take-in from the front tier inserts the same
-- way, so a back queue stays in rank order (a released head is reseated, reseat_head).
local function back_insert_at(host, e, rank)
  local key = P .. 'b:' .. host
  local tail = redis.call('LINDEX', key, -1)
  if tail and entry_rank(tail) > rank then
    local lo = redis.call('HEXISTS', P .. 'l', host)  -- 1: the head is leased, pinned
    local hi = redis.call('LLEN', key) - 1  -- the tail is worse: the answer is <= hi
    if lo <= hi then
      while lo < hi do  -- the first index in [lo, hi] whose entry is of a worse rank
        local mid = math.floor((lo + hi) / 2)
        if entry_rank(redis.call('LINDEX', key, mid)) > rank then hi = mid else lo = mid + 1 end
      end
      local pivot = redis.call('LINDEX', key, lo)
      if entry_rank(pivot) > rank then
        redis.call('LINSERT', key, 'BEFORE', pivot, e)  -- a host's entries are distinct
        return
      end
    end
  end
  redis.call('RPUSH', key, e)
end
local function back_insert(host, e, rank)
  back_insert_at(host, e, rank)
  rerank_due(host)
end

-- A URL given back (RELEASE) returns to the head of its rank: a better URL that arrived
-- while it was leased (behind it: back_insert never passes a leased head) goes first.
local function reseat_head(host)
  local key = P .. 'b:' .. host
  local second = redis.call('LINDEX', key, 1)
  if not second then return end
  local head = redis.call('LINDEX', key, 0)
  local rank = entry_rank(head)
  if entry_rank(second) >= rank then return end
  redis.call('LPOP', key)
  local i = 0
  while true do
    local chunk = redis.call('LRANGE', key, i, i + 127)
    if #chunk == 0 then break end
    for _, x in ipairs(chunk) do
      if entry_rank(x) >= rank then
        redis.call('LINSERT', key, 'BEFORE', x, head)
        return
      end
    end
    i = i + #chunk
  end
  redis.call('RPUSH', key, head)
end

-- Route a URL to be queued (the scheduler's add): straight to the host's back queue,
-- at its rank, when the host is held and none of its URLs waits in the front tier
-- (queued = its hq count before this URL), else to the front queue of its level.
-- news: a revisit at level 0, rank 0.
local function route(host, entry, level, news, queued, row)
  level = math.min(math.max(level, 0), LEVELS - 1)
  local rank = 1 + level
  if news then rank = 0 end
  local e = with_rank(entry, rank)
  if row.held == nil then  -- its back-queue length (bl), false when it holds none
    local len = redis.call('HGET', P .. 'bl', host)
    row.held = len and tonumber(len) or false
    row.read_held = row.held
  end
  if row.held and row.held == queued then
    back_insert(host, e, rank)
    row.held = row.held + 1  -- HINCRBY bl by write_rows
    bs = bs + 1
  else
    redis.call('RPUSH', P .. 'f' .. level, e)
    fs = fs + 1
  end
end

-- Promotion hints (Scheduler._hint, MAX_HINTS): hi (url -> rank) for URLs promoted while
-- their host has URLs in the front tier; LEASE's take-in puts such a URL at the better of
-- its own rank and its hint (take_hint). At most HINTCAP per shard, all dropped when
-- full; a URL queued again drops its hint (admit: a hint is for a URL queued before it).
local hints = nil  -- may hi exist? asked on first use
local function has_hints()
  if hints == nil then hints = redis.call('EXISTS', P .. 'hi') == 1 end
  return hints
end
local function hint(url, rank)
  local key = P .. 'hi'
  local old = redis.call('HGET', key, url)
  if old and tonumber(old) <= rank then return end
  if not old and redis.call('HLEN', key) >= HINTCAP then redis.call('DEL', key) end
  redis.call('HSET', key, url, rank)
  hints = true
end
local function take_hint(url)
  if not has_hints() then return nil end
  local h = redis.call('HGET', P .. 'hi', url)
  if not h then return nil end
  redis.call('HDEL', P .. 'hi', url)
  return tonumber(h)
end

-- PROMOTE one queued URL to `level` (courtly.store.scheduler.promotion_of, then
-- QueueRows.back_promote): a leased URL is never moved (NONE); while some of the host's
-- URLs wait in the front tier (maybe this one) it gets a hint for the take-in (HINT,
-- false); else the URL, found in the host's back queue at a worse rank (never the
-- leased head), leaves it for the tail of the new rank (MOVE).
-- `entry` is the URL's queue entry as ADD wrote it (its depth the one it was queued
-- with): it is found by LPOS at each worse rank (no scan in Lua); an entry whose
-- attempts failed (a released head, first in its host anyway) is not found, nor one
-- asked for at another depth. true if it moved.
local function promote_url(host, entry, level)
  local rank = rank_of(level)
  local key = P .. 'b:' .. host
  local leased = redis.call('HEXISTS', P .. 'l', host)
  if leased == 1 and entry_url(redis.call('LINDEX', key, 0)) == entry_url(entry) then
    return false
  end
  local len = tonumber(redis.call('HGET', P .. 'bl', host) or '0')
  if tonumber(redis.call('HGET', P .. 'hq', host) or '0') > len then
    hint(entry_url(entry), rank)
    return false
  end
  if len == 0 then return false end
  for worse = rank + 1, LEVELS do
    local x = with_rank(entry, worse)
    local at = redis.call('LPOS', key, x)
    if not at and worse == LEVELS then
      x = entry  -- queued before ranks were kept: read as the worst
      at = redis.call('LPOS', key, x)
    end
    if at and (at > 0 or leased == 0) then
      redis.call('LSET', key, at, '')  -- entries are never empty
      redis.call('LREM', key, 1, '')
      back_insert(host, with_rank(x, rank), rank)
      return true
    end
  end
  return false
end

-- The one admission rule of ADD, REVISIT and DUE (the scheduler's add): a retired host
-- refuses (4); the host's queue cap and the shard's share of the crawl's (-1: none)
-- refuse (2, 3), a leased head not counted against the host's; then the seen-set (1),
-- unless the URL is known (a revisit: an unknown URL is marked seen as well). An
-- admitted URL (0) is routed (route: its host's back queue at its rank when the host is
-- held with none of its URLs in the front tier, else the front tier at its level; a
-- known URL at level 0 is the news lane, rank 0).
-- ``rows``: what admit knows of each host of one ADD (retired, leased, URLs queued, its
-- back queue's length), read on its host's first URL: within the loop over the URLs only
-- admit changes the counts, so the later URLs of a host (a page's links are mostly its
-- own host's) read none of them again, and the counts are written once, after the loop
-- (write_rows; nothing in the loop reads hq or bl from the server).
local function admit(host, level, entry, h1, h2, hostcap, crawlcap, known, rows)
  local row = rows[host]
  if not row then
    local queued = tonumber(redis.call('HGET', P .. 'hq', host) or '0')
    row = {retired = redis.call('HEXISTS', P .. 'hr', host) == 1, queued = queued,
      read_queued = queued}
    rows[host] = row
  end
  if row.retired then return 4 end
  local queued = row.queued
  if hostcap >= 0 or crawlcap >= 0 then
    local q = queued
    if row.leased == nil then row.leased = redis.call('HEXISTS', P .. 'l', host) == 1 end
    if row.leased then q = q - 1 end
    if hostcap >= 0 and q >= hostcap then return 2 end
    if crawlcap >= 0 and fs + bs >= crawlcap then return 3 end
  end
  if not seen_add(h1, h2) and not known then return 1 end
  if has_hints() then redis.call('HDEL', P .. 'hi', entry_url(entry)) end
  route(host, entry, level, known and level <= 0, queued, row)
  row.queued = queued + 1  -- hq_add by write_rows
  return 0
end

-- The counts admit kept in ``rows`` go to the server (hq_add, bl): once per host and call.
local function write_rows(rows)
  for host, row in pairs(rows) do
    if row.queued > row.read_queued then hq_add(host, row.queued - row.read_queued) end
    if row.held and row.held > row.read_held then
      redis.call('HINCRBY', P .. 'bl', host, row.held - row.read_held)
    end
  end
end

-- ADD of entries at ARGV[base...]: host cap, crawl cap (-1: none), referrer, then
-- (host, level, entry, h1, h2, catalogue?) per URL, catalogue? being '1' (catalogue a new
-- URL with the referrer above), '>' .. a referrer of its own, or '0'; one status each
-- (admit's); ``known``: the URLs were fetched before (REVISIT). A level ending in '^' is
-- a lift (QueuedUrl.lift): a SEEN URL is promoted to it.
local function add_entries(base, known)
  local hostcap, crawlcap = tonumber(ARGV[base]), tonumber(ARGV[base + 1])
  local referrer = ARGV[base + 2]
  local out = {}
  local lifted = {}
  local rows = {}
  for i = base + 3, #ARGV, 6 do
    local host, entry = ARGV[i], ARGV[i + 2]
    local level, lift = ARGV[i + 1], false
    if string.byte(level, -1) == 94 then  -- '^'
      level, lift = string.sub(level, 1, -2), true
    end
    level = tonumber(level)
    local status = admit(host, level, entry, tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]),
      hostcap, crawlcap, known, rows)
    if status == 1 and lift then
      lifted[#lifted + 1] = {host, entry, level}
    elseif status == 0 then
      local cat = ARGV[i + 5]
      if cat == '1' then
        cat_found(entry_url(entry), 'D' .. entry_depth(entry), referrer)
      elseif string.byte(cat, 1) == 62 then  -- '>' .. the entry's own referrer
        cat_found(entry_url(entry), 'D' .. entry_depth(entry), string.sub(cat, 2))
      end
    end
    out[#out + 1] = status
  end
  write_rows(rows)
  for _, l in ipairs(lifted) do promote_url(l[1], l[2], l[3]) end
  return out
end

-- END of a lease (complete, release): fence by token, then store the host's new state
-- from ARGV[base...]: delta ms of next allowed from now ('' keeps the state, 'z' means
-- 0), state payload, retired reason, failing flag, requests made since the lease
local function end_lease(host, token, base)
  if redis.call('HGET', P .. 'l', host) ~= token then return false end
  redis.call('HDEL', P .. 'l', host)
  redis.call('ZREM', P .. 'x', host)
  local delta = ARGV[base]
  if delta ~= '' then
    local at = 0
    if delta ~= 'z' then at = NOW + tonumber(delta) end
    redis.call('HSET', P .. 'hn', host, fmt(at))
    redis.call('HSET', P .. 'hs', host, ARGV[base + 1])
    if ARGV[base + 2] ~= '' then redis.call('HSET', P .. 'hr', host, ARGV[base + 2])
    else redis.call('HDEL', P .. 'hr', host) end
    if ARGV[base + 3] == '1' then redis.call('SADD', P .. 'fail', host)
    else redis.call('SREM', P .. 'fail', host) end
    req = req + tonumber(ARGV[base + 4])
  end
  return true
end

local function head_score(key)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #head == 0 then return nil end
  return tonumber(head[2])
end
local function least(a, b)
  if a == nil then return b end
  if b == nil then return a end
  return math.min(a, b)
end

-- the best (smallest) non-empty front level, or nil (QueueRows.front_best_level)
local function front_best_level()
  if fs <= 0 then return nil end
  for i = 1, LEVELS do
    if redis.call('LLEN', P .. 'f' .. (i - 1)) > 0 then return i - 1 end
  end
  return nil
end

-- The shard's offer to the crawl (docs/distributed.md, order across shards): what its
-- next LEASE would serve first, "<rank> <at> <since>": the best due head's rank and
-- time (or, with no host due, the next ready host's), and the time the host due longest
-- became due (the ageing queue's first); a better front level replaces the rank while
-- fewer than BREADTH hosts are due (the front-tier-first rule for a LEASE of the
-- client's usual share). '' when the shard has nothing to serve. The store orders the
-- due shards by their offers (store.offer_key).
local OFFER = nil
local function offer()
  local rank, at
  local best = redis.call('ZRANGE', P .. 'd', 0, 0, 'WITHSCORES')
  local due = 0
  if #best > 0 then
    rank = due_rank(tonumber(best[2]))
    at = tonumber(best[2]) - rank * RSPAN
    due = redis.call('ZCARD', P .. 'd')
  else
    local head = redis.call('ZRANGE', P .. 'r', 0, 0, 'WITHSCORES')
    if #head > 0 then
      rank = entry_rank(redis.call('LINDEX', P .. 'b:' .. head[1], 0))
      at = tonumber(head[2])
    end
  end
  if ac < SLOTS and due < BREADTH then
    local level = front_best_level()
    if level and (rank == nil or rank_of(level) < rank) then
      rank = rank_of(level)
      at = math.min(at or NOW, NOW)
    end
  end
  if rank == nil then return '' end
  local since = at
  local oldest = redis.call('ZRANGE', P .. 'da', 0, 0, 'WITHSCORES')
  if #oldest > 0 then since = math.min(since, tonumber(oldest[2])) end
  return rank .. ' ' .. fmt(at) .. ' ' .. fmt(since)
end

-- When the next lease could come (scheduler semantics: nil = only an end of a lease
-- can bring one), and when the shard needs a visit (that, or a lease expiring); the
-- shard's offer is read with them.
local function next_times(scan_spent)
  OFFER = offer()
  local nxt = head_score(P .. 'r')
  if redis.call('EXISTS', P .. 'd') == 1 then nxt = NOW end  -- hosts due (ripened) now
  local due = nxt
  if ac < SLOTS then
    local wake = head_score(P .. 'w')
    nxt = least(nxt, wake)
    due = least(due, wake)
    if fs > 0 then
      due = least(due, NOW)
      if scan_spent then nxt = least(nxt, NOW) end
    end
  end
  due = least(due, head_score(P .. 'x'))
  return nxt, due
end

-- every script returns {version, now, next, due, offer, ...}; '' for a time that is none
-- (and for the offer of a script that did not read it). The reply of a call that wrote
-- is kept for KEEP ms (a fenced call wrote nothing: sent again, it is fenced again).
local function reply(nxt, due, rest)
  local out = {ver, fmt(NOW), nxt and fmt(nxt) or '', due and fmt(due) or '', OFFER or ''}
  for _, v in ipairs(rest) do out[#out + 1] = v end
  if CALL and rest[1] ~= 'fenced' then
    redis.call('SET', P .. 'rp:' .. CALL, cmsgpack.pack(out), 'PX', KEEP)
  end
  return out
end
