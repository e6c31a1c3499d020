-- FENCE: ARGV[3] host, ARGV[4] token, ARGV[5] ttl ms. If the lease is current, its
-- expiry moves to now + ttl and the reply ends in 'ok', else in 'fenced'. Nothing else
-- changes (the version stays).
local host, token = ARGV[3], ARGV[4]
ver = ver - 1
if redis.call('HGET', P .. 'l', host) ~= token then return reply(nil, nil, {'fenced'}) end
redis.call('ZADD', P .. 'x', NOW + tonumber(ARGV[5]), host)
return reply(nil, nil, {'ok'})
