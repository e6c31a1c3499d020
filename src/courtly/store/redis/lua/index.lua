-- INDEX (the crawl's own slot): KEYS[1] due zset (shard -> when it needs a visit),
-- KEYS[2] version hash, KEYS[3] next zset (shard -> when its next lease could come),
-- KEYS[4] offer hash (shard -> its offer, "<rank> <at> <since>": see offer in shard.lua).
-- ARGV[1] now ms (negative: the server's TIME), ARGV[2] k, ARGV[3] ahead ms (a shard
-- due by now + ahead counts as due: the lease that follows runs as of that time),
-- ARGV[4] how many due shards to return at most, then (shard, version, due, next, offer)
-- updates, '' for none. An update older than the stored version of its shard is
-- ignored, so updates may arrive in any order, from any fetcher.
-- Returns {now, number of due shards, up to ARGV[4] due shards (earliest due first), k
-- lowest next: shard, ms, ..., the offers of the due shards returned ('' for none)}.
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local k = tonumber(ARGV[2])
local due_by = now + math.max(0, tonumber(ARGV[3]))
local wanted = tonumber(ARGV[4])
for i = 5, #ARGV, 5 do
  local shard, v = ARGV[i], tonumber(ARGV[i + 1])
  if v > tonumber(redis.call('HGET', KEYS[2], shard) or '-1') then
    redis.call('HSET', KEYS[2], shard, v)
    if ARGV[i + 2] == '' then redis.call('ZREM', KEYS[1], shard)
    else redis.call('ZADD', KEYS[1], ARGV[i + 2], shard) end
    if ARGV[i + 3] == '' then redis.call('ZREM', KEYS[3], shard)
    else redis.call('ZADD', KEYS[3], ARGV[i + 3], shard) end
    if ARGV[i + 4] == '' then redis.call('HDEL', KEYS[4], shard)
    else redis.call('HSET', KEYS[4], shard, ARGV[i + 4]) end
  end
end
if k == 0 then return {string.format('%.17g', now), 0, {}, {}, {}} end
local due = redis.call('ZRANGE', KEYS[1], '-inf', due_by, 'BYSCORE', 'LIMIT', 0, wanted)
local offers = {}
if #due > 0 then
  offers = redis.call('HMGET', KEYS[4], unpack(due))
  for i = 1, #due do offers[i] = offers[i] or '' end
end
return {string.format('%.17g', now), redis.call('ZCOUNT', KEYS[1], '-inf', due_by), due,
  redis.call('ZRANGE', KEYS[3], 0, k - 1, 'WITHSCORES'), offers}
