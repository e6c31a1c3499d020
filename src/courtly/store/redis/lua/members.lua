-- MEMBERS (the crawl's own slot): KEYS[1] the crawl's member zset (fetcher id -> the
-- server time of its last heartbeat, ms). ARGV[1] this fetcher's id ('' to only read),
-- ARGV[2] the lifetime ms (members silent longer are dropped), ARGV[3] '1' to leave
-- (remove the id instead of renewing it). The server's TIME is the clock. Returns the
-- live members' ids.
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
return redis.call('ZRANGE', KEYS[1], 0, -1)
