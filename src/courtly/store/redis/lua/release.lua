-- RELEASE: ARGV[3] host, ARGV[4] token, ARGV[5..9] the host's new state ('' keeps it).
-- Fenced: reply {..., 'fenced'}. Else the leased URL stays at the head of its queue and
-- the host is requeued at its next allowed time.
local host, token = ARGV[3], ARGV[4]
if not end_lease(host, token, 5) then
  ver = ver - 1
  return reply(nil, nil, {'fenced'})
end
bs = bs + 1
requeue(host)
local nxt, due = next_times(false)
finish()
return reply(nxt, due, {'ok'})
