-- RELEASE: ARGV[3] host, ARGV[4] token, ARGV[5..9] the host's new state ('' keeps it),
-- ARGV[10] '1' if the attempt failed (count it on the head entry, "<depth>!<attempts>...").
-- Fenced: reply {..., 'fenced'}. Else the leased URL stays at the head of its queue and
-- the host is requeued at its next allowed time; a better URL that arrived meanwhile goes
-- before it (reseat_head).
local host, token = ARGV[3], ARGV[4]
if not end_lease(host, token, 5) then
  ver = ver - 1
  return reply(nil, nil, {'fenced'})
end
if ARGV[10] == '1' then
  local key = P .. 'b:' .. host
  local e = redis.call('LINDEX', key, 0)
  local depth, n, rest = string.match(e, '^(%d+)!?(%d*)(.*)$')
  redis.call('LSET', key, 0, depth .. '!' .. ((tonumber(n) or 0) + 1) .. rest)
end
reseat_head(host)
bs = bs + 1
requeue(host)
local nxt, due = next_times(false)
finish()
return reply(nxt, due, {'ok'})
