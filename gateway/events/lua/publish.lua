-- Publish one event: number it, keep it in the log, send it. Atomic, so messages go out in
-- version order and the log never has a hole a subscriber could mistake for a missed message.
-- KEYS[1] version counter, KEYS[2] epoch, KEYS[3] log (sorted set, score = version)
-- ARGV[1] channel, ARGV[2] the encoded event (JSON), ARGV[3] an epoch id to use when there is none
-- (a new or wiped Redis: subscribers that knew another epoch resync), ARGV[4] log entries to keep
redis.call('SET', KEYS[2], ARGV[3], 'NX')
local epoch = redis.call('GET', KEYS[2])
local version = redis.call('INCR', KEYS[1])
local message = '{"v":' .. version .. ',"epoch":"' .. epoch .. '","body":' .. ARGV[2] .. '}'
redis.call('ZADD', KEYS[3], version, message)
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(tonumber(ARGV[4]) + 1))
redis.call('PUBLISH', ARGV[1], message)
return {version, epoch}
