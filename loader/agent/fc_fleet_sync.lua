-- SPDX-License-Identifier: BSD-2-Clause
-- freqctl's fleet record of one key-window (or a GCRA lease pool): every read
-- and write of it, one script per call, so Redis runs each call whole
-- (doc/fleet-design, "the script"). Node i's fields are absolute totals, so a
-- retry, a duplicate or a resend after a failover re-asserts, never adds.
--
-- KEYS[1] the record. ARGV: 1 "1" (this script's version), 2 i (node number),
-- 3 N now (0: a pool), 4 n (sum of the split's shares), 5 set (digest of the
-- split's node set), 6 ttl ms (on creation only), 7 G applied by i, or "-" to
-- adopt (tell, change nothing), 8 R released by i (absolute, locked),
-- 9 U used by i (absolute), 10 want, 11 settled ("1": i holds nothing to
-- release), 12 demand channel, 13.. pairs (j, s_j) of the split.
-- Returns {g, r, G, R, free, holders, frozen}, or {-1, n} when the record
-- is of another split (nothing recorded, nothing granted), or an error
-- "FLEET ..." when the call is refused (nothing recorded).
local h, i = KEYS[1], ARGV[2]
local N, n = tonumber(ARGV[3]), tonumber(ARGV[4])
if ARGV[1] ~= '1' then return redis.error_reply('FLEET script version 1, called as ' .. ARGV[1]) end
local f = {}
local raw = redis.call('HGETALL', h)
for k = 1, #raw, 2 do f[raw[k]] = raw[k + 1] end
local function num(k) return tonumber(f[k] or '0') end
-- Integers as integers: Lua's own conversion keeps 14 digits.
local function int(x) return string.format('%d', x) end
if raw[1] == nil then
  local new = {'v', '1', 'n', int(n), 'set', ARGV[5], 'G', '0', 'R', '0'}
  for k = 13, #ARGV - 1, 2 do new[#new + 1] = 's' .. ARGV[k]; new[#new + 1] = ARGV[k + 1] end
  -- A node that applied grants of a record Redis does not hold: a write was
  -- lost. (A release may come first: it is locked before it is sent, and a
  -- lost one only makes the pool smaller.)
  if ARGV[7] ~= '-' and tonumber(ARGV[7]) > 0 then
    new[#new + 1] = 'frozen'; new[#new + 1] = '1'
  end
  redis.call('HSET', h, unpack(new))
  redis.call('PEXPIRE', h, ARGV[6])
  for k = 1, #new, 2 do f[new[k]] = new[k + 1] end
elseif f.v ~= '1' then
  return redis.error_reply('FLEET record ' .. h .. ' is of version ' .. tostring(f.v) .. ', not 1')
elseif f.set ~= ARGV[5] or num('n') ~= n then
  return {-1, num('n')}
end
local g, r, G, R = num('g' .. i), num('r' .. i), num('G'), num('R')
if ARGV[7] == '-' then return {g, r, G, R, 0, 0, f.frozen and 1 or 0} end
local gapp, rn, un, want = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local set = {}
local function put(k, v) set[#set + 1] = k; set[#set + 1] = int(v) end
-- More applied than Redis holds: a grant was lost (a restart, a promoted
-- replica that had not confirmed). Restore it and grant nothing more here.
if gapp > g then G = G + gapp - g; g = gapp; f.frozen = '1'; put('g' .. i, g); put('frozen', 1) end
-- A node releases at most what it was allotted: its share and its grants.
-- More is a hostile or corrupt caller: refused whole, nothing written, so
-- that the record (R, and G - R within N) stays good for the other nodes.
if rn > num('s' .. i) + g then
  return redis.error_reply('FLEET node ' .. i .. ' releases ' .. int(rn) .. ', more than its share ' ..
    int(num('s' .. i)) .. ' and grants ' .. int(g) .. ' of ' .. h)
end
if rn > r then R = R + rn - r; r = rn; put('r' .. i, r) end
if un > num('u' .. i) then put('u' .. i, un) end
local free, grant, others, holders = N - (n + G - R), 0, 0, 0
for k in pairs(f) do
  -- Another node asking (in the split or not), or a holder: one of the
  -- split not asking, unsettled, with allotment it has not reported used.
  local kind, j = string.match(k, '^([qs])(%d+)$')
  if j and j ~= i then
    if kind == 'q' then others = others + 1
    elseif not f['q' .. j] and not f['x' .. j] and num(k) + num('g' .. j) - num('r' .. j) > num('u' .. j) then
      holders = holders + 1
    end
  end
end
-- gapp < g: a duplicate (its first run's reply was lost); it only learns g.
if want > 0 and gapp == g and not f.frozen and free > 0 then
  grant = math.min(want, math.ceil(free / (others + 1)), free)
  g = g + grant; G = G + grant; free = free - grant
  put('g' .. i, g)
end
put('G', G); put('R', R)
redis.call('HSET', h, unpack(set))
if want > grant then redis.call('HSET', h, 'q' .. i, '1') else redis.call('HDEL', h, 'q' .. i) end
if ARGV[11] == '1' then redis.call('HSET', h, 'x' .. i, '1') else redis.call('HDEL', h, 'x' .. i) end
if want > grant and holders > 0 then redis.call('PUBLISH', ARGV[12], h .. ' ' .. i) end
return {g, r, G, R, free, holders, f.frozen and 1 or 0}
