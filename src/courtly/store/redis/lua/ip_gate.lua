-- IP GATE: KEYS[1] the address's slot set (member: a holder's token, score: when the
-- slot frees itself, ms); KEYS[2] its turns (member: a waiting gate, one per process,
-- score: when it first found the address full, ms); KEYS[3] the waiting gates' lapse
-- times (score: when a gate that stopped asking loses its turn, ms). KEYS[2] and KEYS[3]
-- carry KEYS[1] as their hash tag: one slot. ARGV[1] token, ARGV[2] cap, ARGV[3] hold
-- ms, ARGV[4] the calling gate, ARGV[5] lapse ms, ARGV[6] 'take' or 'leave'.
--
-- take: drops slots whose time is up (their holder died) and gates that stopped asking,
-- then takes a slot if fewer than cap are held and fewer gates wait ahead of the caller
-- than slots are free (a caller that is not waiting yet has every waiting gate ahead of
-- it): returns {1}, and the caller leaves the turns. Otherwise the caller keeps its turn
-- (joins at the tail the first time) and gets {0, ms until the earliest held slot
-- frees itself, gates ahead of it}. Release is a ZREM of the token. leave: the caller
-- gives up its turn (it waits no more), returns {1}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = ARGV[4]
if ARGV[6] == 'leave' then
  redis.call('ZREM', KEYS[2], me)
  redis.call('ZREM', KEYS[3], me)
  return {1}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, gate in ipairs(lapsed) do
  redis.call('ZREM', KEYS[2], gate)
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local hold = tonumber(ARGV[3])
local free = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
local rank = redis.call('ZRANK', KEYS[2], me)
local ahead = rank
if not ahead then
  ahead = redis.call('ZCARD', KEYS[2])
end
if free > ahead then
  redis.call('ZADD', KEYS[1], now + hold, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], hold)
  if rank then
    redis.call('ZREM', KEYS[2], me)
    redis.call('ZREM', KEYS[3], me)
  end
  return {1}
end
local lapse = tonumber(ARGV[5])
if not rank then
  redis.call('ZADD', KEYS[2], now, me)
end
redis.call('ZADD', KEYS[3], now + lapse, me)
redis.call('PEXPIRE', KEYS[2], lapse)
redis.call('PEXPIRE', KEYS[3], lapse)
local left = 0
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then
  left = math.max(0, tonumber(first[2]) - now)
end
return {0, left, ahead}
