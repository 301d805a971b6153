-- Settle reservations: add a delta (negative returns unused tokens) to counters that still exist.
-- A counter whose window expired is left alone: there is nothing to give back to.
-- KEYS: counters. ARGV: one delta per key.
for i = 1, #KEYS do
  if redis.call("EXISTS", KEYS[i]) == 1 then
    redis.call("INCRBY", KEYS[i], tonumber(ARGV[i]))
  end
end
return #KEYS
