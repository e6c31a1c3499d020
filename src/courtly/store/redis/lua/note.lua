-- NOTE: write recrawl rows (courtly.store.revisit_rows), kept with their host's queue:
-- rv (url -> the row's payload), rk (url -> "<lane> <h1> <h2> <host> <entry>": what DUE
-- needs to queue it again), rd (url -> due ms on the server's clock, the due index),
-- ro (URLs out: queued again, their visit not noted yet).
-- ARGV[3...]: five per row: url, due ms on the server's clock ('' for none), payload,
-- queue meta, out ('1': written out, a failed fetch's retry queued; '0': not).
for i = 3, #ARGV, 5 do
  local url = ARGV[i]
  redis.call('HSET', P .. 'rv', url, ARGV[i + 2])
  redis.call('HSET', P .. 'rk', url, ARGV[i + 3])
  if ARGV[i + 4] == '1' then
    redis.call('SADD', P .. 'ro', url)
  else
    redis.call('SREM', P .. 'ro', url)
  end
  if ARGV[i + 1] == '' then
    redis.call('ZREM', P .. 'rd', url)
  else
    redis.call('ZADD', P .. 'rd', ARGV[i + 1], url)
  end
end
local nxt, due = next_times(false)
finish()
return reply(nxt, due, {})
