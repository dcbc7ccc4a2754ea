-- wrk: prints the run as one JSON line; `bad` counts answers of status 400 and above and
-- every socket error.
done = function(summary, latency, requests)
  local secs = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format('JSON {"calls":%d,"rps":%.1f,"p50_ms":%.3f,"bad":%d}\n',
    summary.requests, summary.requests / secs, latency:percentile(50) / 1000,
    e.status + e.connect + e.read + e.write + e.timeout))
end
