-- COMPLETE: ARGV[3] host, ARGV[4] token, ARGV[5..9] the host's new state (see end_lease),
-- ARGV[10] record count R, then R (url, payload, referrer) records, then the discovered
-- URLs as for ADD. Fenced (token not current): nothing is written, reply {..., 'fenced'}.
-- Else the leased head leaves its queue, the discoveries are added (the new ones
-- catalogued with the lease's URL as referrer), the records written, the host requeued.
local host, token = ARGV[3], ARGV[4]
if not end_lease(host, token, 5) then
  ver = ver - 1
  return reply(nil, nil, {'fenced'})
end
redis.call('LPOP', P .. 'b:' .. host)
redis.call('HINCRBY', P .. 'bl', host, -1)
hq_add(host, -1)
local base = 11 + 3 * tonumber(ARGV[10])
local statuses = add_entries(base)
cat_records(11, tonumber(ARGV[10]))
requeue(host)
local nxt, due = next_times(false)
finish()
return reply(nxt, due, statuses)
