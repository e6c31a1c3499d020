-- RECORD: ARGV[3] count R, then R (url, payload, referrer) records (see cat_records):
-- an entry replaces any earlier one of its URL; the first non-empty referrer stays.
cat_records(4, tonumber(ARGV[3]))
local nxt, due = next_times(false)
finish()
return reply(nxt, due, {})
