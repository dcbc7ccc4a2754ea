"""DuckDB on the same CSV and query as benches/data_sources.rs.

Usage: python3 bench_duckdb.py <csv>

Prints one line of `key=value` pairs: import_s (read + infer + store into a
DuckDB file), query_s (best of the runs), peak_rss_mib and the query's
group count.
"""

import os
import resource
import sys
import tempfile
import time

import duckdb

QUERY = (
    "SELECT region, SUM(units * price) AS revenue, COUNT(*) AS n "
    "FROM sales GROUP BY region ORDER BY region"
)
RUNS = 5


def main() -> None:
    csv = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(os.path.join(tmp, "bench.duckdb"))
        start = time.perf_counter()
        con.execute(f"CREATE TABLE sales AS SELECT * FROM read_csv_auto('{csv}')")
        con.execute("CHECKPOINT")
        import_s = time.perf_counter() - start

        best = float("inf")
        rows = []
        for _ in range(RUNS):
            start = time.perf_counter()
            rows = con.execute(QUERY).fetchall()
            best = min(best, time.perf_counter() - start)
        con.close()

    # ru_maxrss is in KiB on Linux.
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"import_s={import_s:.3f} query_s={best:.4f} "
        f"peak_rss_mib={peak_mib:.0f} groups={len(rows)} duckdb={duckdb.__version__}"
    )


if __name__ == "__main__":
    main()
