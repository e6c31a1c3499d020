-- REVISIT: ADD's arguments and reply, for URLs known to be fetched before (a recrawl's
-- due URLs, FrontierStore.revisit): routed and budgeted as ADD does, but the seen-set is
-- not asked (an unknown URL is marked seen as well), so a known URL is queued again.
local statuses = add_entries(3, true)
local nxt, due = next_times(false)
finish()
return reply(nxt, due, statuses)
