-- INDEX (the crawl's own slot): KEYS[1] due zset (shard -> when it needs a visit),
-- KEYS[2] version hash, KEYS[3] next zset (shard -> when its next lease could come).
-- ARGV[1] k, then (shard, version, due, next) updates, '' for none. An update older than
-- the stored version of its shard is ignored, so updates may arrive in any order.
-- Returns {k lowest due: shard, ms, ...}, {k lowest next: shard, ms, ...}.
local k = tonumber(ARGV[1])
for i = 2, #ARGV, 4 do
  local shard, v = ARGV[i], tonumber(ARGV[i + 1])
  if v > tonumber(redis.call('HGET', KEYS[2], shard) or '-1') then
    redis.call('HSET', KEYS[2], shard, v)
    if ARGV[i + 2] == '' then redis.call('ZREM', KEYS[1], shard)
    else redis.call('ZADD', KEYS[1], ARGV[i + 2], shard) end
    if ARGV[i + 3] == '' then redis.call('ZREM', KEYS[3], shard)
    else redis.call('ZADD', KEYS[3], ARGV[i + 3], shard) end
  end
end
return {redis.call('ZRANGE', KEYS[1], 0, k - 1, 'WITHSCORES'),
  redis.call('ZRANGE', KEYS[3], 0, k - 1, 'WITHSCORES')}
