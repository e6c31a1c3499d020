-- DUE: queue again the shard's recrawl rows due by now (the server's clock), earliest
-- first, by the rd index (courtly.store.revisit_rows.requeue, which memory and SQLite
-- run over the scheduler's add(known=True)): admitted by the prelude's rule (admit, the
-- one ADD and REVISIT use) as a known URL at its lane's level. A queued row is out and
-- due again after the lost interval; a refused one after the retry one.
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
local rows = {}  -- admit's reads of each host, once per call
for _, url in ipairs(urls) do
  local meta = redis.call('HGET', P .. 'rk', url)
  local lane, h1, h2, host, entry = string.match(meta, '^(%d+) (%d+) (%d+) (%S+) (.*)$')
  local level = lane_level[tonumber(lane)] or lane_level[#lane_level]
  local status = admit(host, level, entry, tonumber(h1), tonumber(h2), hostcap, crawlcap, true, rows)
  if status == 0 then
    redis.call('ZADD', P .. 'rd', NOW + lost, url)
    redis.call('SADD', P .. 'ro', url)
    queued[#queued + 1] = url
  else
    redis.call('ZADD', P .. 'rd', NOW + retry, url)
    refused = refused + 1
  end
end
write_rows(rows)
local nxt, due = next_times(false)
finish()
local head = redis.call('ZRANGE', P .. 'rd', 0, 0, 'WITHSCORES')
local out = {refused, head[2] or ''}
for _, url in ipairs(queued) do out[#out + 1] = url end
return reply(nxt, due, out)
