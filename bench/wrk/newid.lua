-- newid.lua: wrk sends the demo's sample bid request with a new request id
-- each time (demo-request-1 becomes r<thread>-<n>), so no two bids share an
-- id and every notice key is new. With USERS set, each request is also for
-- a random demo user (demo-user-1 .. demo-user-$USERS), so the bidder reads
-- a profile per bid instead of one cached one. Needs REQUEST, the path of
-- demo/sample-request.json.
local f = assert(io.open(os.getenv("REQUEST") or "demo/sample-request.json"))
local body = f:read("*a")
f:close()
local pre, post = body:match('^(.-)"id": "demo%-request%-1"(.*)$')
assert(pre, "the sample request's id is demo-request-1")
local users = tonumber(os.getenv("USERS") or "0")
local upre, upost
if users > 0 then
  upre, upost = post:match('^(.-)"user": {"id": "demo%-user%-1", "buyeruid": "demo%-user%-1"}(.*)$')
  assert(upre, "the sample request names demo-user-1 as user.id and user.buyeruid after its id")
end
local n = 0
local tag = tostring(math.random(1, 1000000000))
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  local rest = post
  if users > 0 then
    local u = math.random(1, users)
    rest = upre .. '"user": {"id": "demo-user-' .. u .. '", "buyeruid": "demo-user-' .. u .. '"}' .. upost
  end
  return wrk.format(nil, "/openrtb2/bid", nil, pre .. '"id": "r' .. tag .. '-' .. n .. '"' .. rest)
end
