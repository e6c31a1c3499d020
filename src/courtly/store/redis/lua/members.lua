-- MEMBERS (the crawl's own slot): KEYS[1] the crawl's member zset (fetcher id -> the
-- server time of its last heartbeat, ms), KEYS[2] the crawl's meta hash. ARGV[1] this
-- fetcher's id ('' to only read), ARGV[2] the lifetime ms (members silent longer are
-- dropped), ARGV[3] '1' to leave (remove the id instead of renewing it). The server's
-- TIME is the clock. Returns 1 if the meta hash is there (0: the crawl's keys are gone,
-- a server restarted without persistence or flushed; nothing is written then), then the
-- live members' ids.
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[1] ~= '' then
  if ARGV[3] == '1' then
    redis.call('ZREM', KEYS[1], ARGV[1])
  else
    redis.call('ZADD', KEYS[1], now, ARGV[1])
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
local out = {1}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  out[#out + 1] = id
end
return out
