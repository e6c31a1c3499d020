-- COUNTS: read only. Reply head, then: front, back, active, ready, snoozed, parked,
-- inactive, inactive due, held, leased, seen, requests, retired, then the URLs in each
-- front-tier level (LEVELS of them, level 0 first: their sum is front).
ver = ver - 1
local ready = redis.call('ZCOUNT', P .. 'r', '-inf', NOW)
local snoozed = redis.call('ZCARD', P .. 'r') - ready
ready = ready + redis.call('ZCARD', P .. 'd')  -- due hosts (LEASE's ripen) are ready
local inactive = redis.call('ZCARD', P .. 'w')
local wdue = redis.call('ZCOUNT', P .. 'w', '-inf', NOW)
local parked = 0
for _, host in ipairs(redis.call('SMEMBERS', P .. 'fail')) do
  local at = redis.call('ZSCORE', P .. 'r', host) or redis.call('ZSCORE', P .. 'w', host)
  if at and tonumber(at) > NOW and host_next(host) > NOW then parked = parked + 1 end
end
local seen = tonumber(redis.call('HGET', M, 'seen') or '0')
local out = {fs, bs, ac, ready, snoozed, parked, inactive, wdue,
  redis.call('HLEN', P .. 'bl'), redis.call('HLEN', P .. 'l'), seen, req, ret}
for i = 1, LEVELS do out[#out + 1] = redis.call('LLEN', P .. 'f' .. (i - 1)) end
return reply(nil, nil, out)
