-- wrk script for bench/load/run_load.sh: every connection cycles through the
-- daemon's read endpoints (Prometheus scrape, cost reports in each format,
-- the dashboard feed), starting at a different one so that at any moment all
-- of them are in flight. Paths come from LOAD_PATHS (space-separated).
local paths = {}
for p in string.gmatch(os.getenv("LOAD_PATHS") or "/metrics", "%S+") do
  paths[#paths + 1] = p
end

local counter = 0
function setup(thread)
  thread:set("offset", counter)
  counter = counter + 1
end

local i = 0
function init(args)
  i = (offset or 0) * 7
end

function request()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end

-- One machine-readable line for the script; wrk's own summary is printed above it.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
      "WRK requests=%d duration_us=%d connect=%d read=%d write=%d status=%d timeout=%d " ..
      "lat_p50_ms=%.1f lat_p99_ms=%.1f lat_max_ms=%.1f\n",
      summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
      latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
