"""Medians per tree, path and callers of the runs bench-pipeline/run.sh recorded."""
import glob
import json
import statistics
import sys

out, names = sys.argv[1], sys.argv[2:]
print("| tree | path | callers | calls/s | p50 | CPU/call | RSS | failed | runs |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for name in names:
    runs = [json.loads(line) for f in sorted(glob.glob(f"{out}/{name}/r*.jsonl")) for line in open(f)]
    for path in sorted({r["path"] for r in runs}):
        for callers in (1, 16):
            rs = [r for r in runs if r["path"] == path and r["conc"] == callers]
            if not rs:
                continue
            median = lambda f: statistics.median(f(r) for r in rs)
            rps = median(lambda r: float(r["r"]["rps"]))
            p50 = median(lambda r: float(r["r"]["p50_ms"]))
            cpu = median(lambda r: r["gw_cpu_ticks"] * 1e4 / max(r["r"]["good"], 1))
            rss = median(lambda r: r["gw_rss_kb"]) / 1024
            bad = sum(max(r["r"]["bad"], 0) for r in rs)
            print(f"| {name} | {path} | {callers} | {rps:,.0f} | {p50:.3f} ms | {cpu:.0f} µs | {rss:.0f} MB | {bad} | {len(rs)} |")
