-- HOST: read only. ARGV[3] host. Reply head, then its next allowed ms and state payload
-- ('' and '' for a host never stored).
ver = ver - 1
local host = ARGV[3]
return reply(nil, nil, {redis.call('HGET', P .. 'hn', host) or '', redis.call('HGET', P .. 'hs', host) or ''})
