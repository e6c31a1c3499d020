-- PROMOTE: ARGV[3...]: (host, entry, level) per URL, the entry as ADD spells it. Each queued URL moves up to its new
-- level where that is better than where it is (promote_url: the scheduler's rule).
-- Returns the reply head, then 1 for each URL moved in its back queue now, else 0.
local out = {}
for i = 3, #ARGV, 3 do
  if promote_url(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])) then
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
local nxt, due = next_times(false)
finish()
return reply(nxt, due, out)
