-- newid.lua: wrk sends the demo's sample bid request with a new request id
-- each time (demo-request-1 becomes r<thread>-<n>), so no two bids share an
-- id and every notice key is new. Needs REQUEST, the path of
-- demo/sample-request.json.
local f = assert(io.open(os.getenv("REQUEST") or "demo/sample-request.json"))
local body = f:read("*a")
f:close()
local pre, post = body:match('^(.-)"id": "demo%-request%-1"(.*)$')
assert(pre, "the sample request's id is demo-request-1")
local n = 0
local tag = tostring(math.random(1, 1000000000))
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  return wrk.format(nil, "/openrtb2/bid", nil, pre .. '"id": "r' .. tag .. '-' .. n .. '"' .. post)
end
