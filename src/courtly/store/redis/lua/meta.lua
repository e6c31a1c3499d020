-- META (the crawl's own slot): KEYS[1] the crawl's meta hash. ARGV: field, value pairs
-- of the layout a new crawl gets. The first fetcher of a crawl writes them; every later
-- one reads what was written (the layout is fixed for the crawl's life).
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
