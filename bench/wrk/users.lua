-- users.lua: wrk sends the demo's sample bid request, each time for a
-- random demo user (demo-user-$FIRST .. demo-user-$FIRST+$USERS-1; FIRST
-- default 1, USERS default 1000).
-- Needs REQUEST, the path of demo/sample-request.json.
local f = assert(io.open(os.getenv("REQUEST") or "demo/sample-request.json"))
local body = f:read("*a")
f:close()
local pre, post = body:match('^(.-)"user": {"id": "demo%-user%-1", "buyeruid": "demo%-user%-1"}(.*)$')
assert(pre, "the sample request names demo-user-1 as user.id and user.buyeruid")
local users = tonumber(os.getenv("USERS") or "1000")
local first = tonumber(os.getenv("FIRST") or "1")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  local u = math.random(first, first + users - 1)
  return wrk.format(nil, "/openrtb2/bid", nil,
    pre .. '"user": {"id": "demo-user-' .. u .. '", "buyeruid": "demo-user-' .. u .. '"}' .. post)
end
