-- Seed a counter (a month's budget use, from the ledger) unless another process already has.
-- KEYS[1]: counter. ARGV: value, ttl_ms. Returns the counter's value after the call.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return tonumber(ARGV[1])
end
return tonumber(redis.call("GET", KEYS[1]))
