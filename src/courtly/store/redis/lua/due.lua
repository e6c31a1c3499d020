-- DUE: queue again the shard's recrawl rows due by now (the server's clock), earliest
-- first, by the rd index (courtly.store.revisit_rows.requeue, which memory and SQLite
-- run over the scheduler's add(known=True)): a retired host refuses (4), the queue
-- budgets refuse (2, 3) as ADD does, the seen-set is not asked (an unknown URL is marked
-- seen); a URL goes straight to its host's back queue when the host is held with none
-- of its URLs in the front tier, else to the front tier at its lane's level. A queued
-- row is out and due again after the lost interval; a refused one after the retry one.
-- ARGV[3...]: limit, host cap, crawl cap (-1: none), retry ms, lost ms, then the level
-- of each lane (news, ordinary). Returns the reply head, the refused count, the
-- earliest due ms of the shard after the step ('' if none), then the URLs queued.
local limit = tonumber(ARGV[3])
local hostcap, crawlcap = tonumber(ARGV[4]), tonumber(ARGV[5])
local retry, lost = tonumber(ARGV[6]), tonumber(ARGV[7])
local lane_level = {}
for i = 8, #ARGV do lane_level[i - 8] = tonumber(ARGV[i]) end
local urls = redis.call('ZRANGEBYSCORE', P .. 'rd', '-inf', NOW, 'LIMIT', 0, limit)
local queued, refused = {}, 0
for _, url in ipairs(urls) do
  local meta = redis.call('HGET', P .. 'rk', url)
  local lane, h1, h2, host, entry = string.match(meta, '^(%d+) (%d+) (%d+) (%S+) (.*)$')
  local status = 0
  if redis.call('HEXISTS', P .. 'hr', host) == 1 then
    status = 4
  else
    local q = tonumber(redis.call('HGET', P .. 'hq', host) or '0')
    if hostcap >= 0 or crawlcap >= 0 then
      local held = q
      if redis.call('HEXISTS', P .. 'l', host) == 1 then held = held - 1 end
      if hostcap >= 0 and held >= hostcap then status = 2
      elseif crawlcap >= 0 and fs + bs >= crawlcap then status = 3 end
    end
    if status == 0 then
      seen_add(tonumber(h1), tonumber(h2))
      local level = lane_level[tonumber(lane)] or lane_level[#lane_level]
      route(host, entry, level, level <= 0, q)
      hq_add(host, 1)
    end
  end
  if status == 0 then
    redis.call('ZADD', P .. 'rd', NOW + lost, url)
    redis.call('SADD', P .. 'ro', url)
    queued[#queued + 1] = url
  else
    redis.call('ZADD', P .. 'rd', NOW + retry, url)
    refused = refused + 1
  end
end
local nxt, due = next_times(false)
finish()
local head = redis.call('ZRANGE', P .. 'rd', 0, 0, 'WITHSCORES')
local out = {refused, head[2] or ''}
for _, url in ipairs(queued) do out[#out + 1] = url end
return reply(nxt, due, out)
