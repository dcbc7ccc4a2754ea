#!/usr/bin/env python3
"""Checks the relative links of the repository's Markdown files: the file a
link names exists, and its #anchor is a heading of that file (GitHub's
slugs). Prints each broken link and exits 1 when there is one.

Usage: scripts/doc-links.py [FILE.md ...]  (default: every tracked *.md)
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading):
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found, fenced = {}, set(), False
        for line in open(path, encoding="utf-8"):
            if FENCE.match(line):
                fenced = not fenced
            m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        cache[path] = found
    return cache[path]


def links(path):
    fenced = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            yield number, m.group(1)


def broken(path):
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(dest):
            yield number, target, "no such file"
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            yield number, target, "no such heading"


def main(files):
    if not files:
        out = subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True, check=True)
        files = [f for f in out.stdout.split() if "node_modules" not in f]
    bad = 0
    for path in files:
        for number, target, why in broken(path):
            print(f"{path}:{number}: {target}: {why}")
            bad += 1
    print(f"{len(files)} files, {bad} broken links", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
