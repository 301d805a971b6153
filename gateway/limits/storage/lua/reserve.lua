-- Atomic check-and-reserve over several limits: all are charged, or none.
-- KEYS: every check's keys, flattened in order.
-- ARGV: n_checks, then per check: n_keys, limit, cost, min_cost, ttl_ms, must_exist, weight_1..weight_n
-- Returns {status, index, used_1, granted_1, ..., used_n, granted_n}
--   status 1: reserved (used_i is the count after the reservation)
--   status 0: check `index` refused (used_i is the count seen; nothing charged)
--   status -1: check `index` has must_exist and its counter is missing (seed it, then retry)
local n = tonumber(ARGV[1])
local a, k = 2, 1
local checks = {}
for i = 1, n do
  local nkeys = tonumber(ARGV[a])
  local c = {first = KEYS[k], limit = tonumber(ARGV[a + 1]), cost = tonumber(ARGV[a + 2]),
             min_cost = tonumber(ARGV[a + 3]), ttl = tonumber(ARGV[a + 4]), must_exist = ARGV[a + 5] == "1"}
  local used = 0
  for j = 0, nkeys - 1 do
    local v = redis.call("GET", KEYS[k + j])
    if v == false and j == 0 and c.must_exist then
      return {-1, i}
    end
    used = used + (tonumber(v) or 0) * tonumber(ARGV[a + 6 + j])
  end
  c.used = used
  local left = c.limit - used
  if left >= c.cost then
    c.granted = c.cost
  elseif left >= c.min_cost and c.min_cost < c.cost then
    c.granted = math.floor(left)
  else
    local out = {0, i}
    for m = 1, i - 1 do
      out[#out + 1] = math.ceil(checks[m].used)
      out[#out + 1] = 0
    end
    out[#out + 1] = math.ceil(used)
    out[#out + 1] = 0
    return out
  end
  checks[i] = c
  a = a + 6 + nkeys
  k = k + nkeys
end
local out = {1, 0}
for i = 1, n do
  local c = checks[i]
  if c.granted > 0 then
    redis.call("INCRBY", c.first, c.granted)
  end
  if c.must_exist then
    -- The counter was seeded with its own expiry; keep it.
  else
    redis.call("PEXPIRE", c.first, c.ttl)
  end
  out[#out + 1] = math.ceil(c.used + c.granted)
  out[#out + 1] = c.granted
end
return out
