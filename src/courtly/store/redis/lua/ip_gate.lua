-- IP GATE: KEYS[1] the address's slot set (member: a holder's token, score: when the
-- slot frees itself, ms). ARGV[1] token, ARGV[2] cap, ARGV[3] hold ms. Drops slots whose
-- time is up (their holder died), then takes one if fewer than cap are held: returns
-- {1}, or {0, ms until the earliest held slot frees itself}. Release is a ZREM.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
  return {1}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, math.max(0, tonumber(first[2]) - now)}
