#!/usr/bin/env python3
"""Judges the conformance suite's server scenarios run side by side by
scripts/conformance-server.sh: for each requirement set, every scenario's
verdict against the reference server directly and through Switchboard's
endpoint, both tallies, and the scenarios that pass directly but fail
through the endpoint. Exits 1 when there is any such scenario, 2 when a
run left no verdicts to compare.

Usage: conformance-server-parity.py <results dir> <set>...
(the suite's logs are <results dir>/<target>-<set>.log)."""

import re
import sys
from pathlib import Path

# The suite's verdict lines: "✓ name: 2 passed, 0 failed".
VERDICT = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed")


def verdicts(log: Path) -> dict[str, bool]:
    """Each scenario of a run, and whether the suite passed it."""
    found: dict[str, bool] = {}
    if not log.exists():
        return found
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        match = VERDICT.match(line)
        if match:
            found[match.group(2)] = match.group(1) == "✓"
    return found


def mark(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "-"}[passed]


def judge(results: Path, requirement_set: str) -> tuple[list[str], bool]:
    """Prints one set's table; returns the scenarios that lost parity and
    whether both runs gave verdicts."""
    direct = verdicts(results / f"direct-{requirement_set}.log")
    endpoint = verdicts(results / f"switchboard-{requirement_set}.log")
    names = list(dict.fromkeys([*direct, *endpoint]))
    width = max([len(name) for name in names] + [8])
    print(f"== {requirement_set}")
    print(f"   {'scenario':<{width}}  direct  endpoint")
    lost = []
    for name in names:
        ours, theirs = direct.get(name), endpoint.get(name)
        note = ""
        if ours and not theirs:
            lost.append(name)
            note = "  <- passes directly, fails through the endpoint"
        print(f"   {name:<{width}}  {mark(ours):<6}  {mark(theirs)}{note}")
    tally = lambda found: f"{sum(found.values())}/{len(found)}"
    print(
        f"== {requirement_set}: passed directly {tally(direct)}, "
        f"through the endpoint {tally(endpoint)}; "
        f"passing directly but not through the endpoint: {len(lost)}"
    )
    return lost, bool(direct) and bool(endpoint)


def main() -> int:
    results = Path(sys.argv[1])
    status = 0
    for requirement_set in sys.argv[2:]:
        lost, complete = judge(results, requirement_set)
        if not complete:
            print(f"conformance-server: {requirement_set}: a run gave no verdicts (see {results})")
            status = max(status, 2)
        elif lost:
            print(f"conformance-server: {requirement_set}: parity lost: {', '.join(lost)}")
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
