-- ADD: ARGV[3...] as add_entries reads them (caps, referrer, then six fields per URL).
-- Returns the reply head, then one status per URL (AddStatus values).
local statuses = add_entries(3)
local nxt, due = next_times(false)
finish()
return reply(nxt, due, statuses)
