#!/usr/bin/env python3
"""Holds a service's import graph to the house rules (STYLE.md, docs/architecture.md).

Usage: scripts/import-graph.py [services/<name> ...]   (default: every service)

Reads the `use crate::...`, `use super::...` and `use self::...` lines of a
service's `src/` (and such paths written inline in code, or through a child
module; unit tests are left out) and checks four rules:

(a) no circle between the modules of `src/domain`, at every depth: the graph
    is built once with a node per domain/X (`domain/run/mod.rs` and everything
    under `domain/run/` are one node) and once with a node per domain/X/Y
    (`domain/run/steps/mod.rs` and everything under `domain/run/steps/` are
    one node), and neither may hold a circle;
(b) no port (`domain/ports.rs` or `domain/ports/*`) imports a use case: a
    domain module that itself imports a port is one (what a port names must
    sit below the ports, not above them);
(c) the service's `inbound` never imports its `outbound`: the adapters meet
    only in `app` (the wiring), through the domain's ports;
(d) nothing in another room (`crates/`, `cli/`, `test-servers/`,
    `conformance/`) or another service imports the service's `outbound`;
    the end-to-end tests (`tests/`) and the fuzz targets (`fuzz/`) exercise
    adapters directly and may;
(e) the service error (`domain/error.rs`) sits above what it wraps: only a
    use case (a domain module that imports a port: `domain/ports*`, or a
    `ports` module of its own like `domain/policy/ports.rs`) imports it, and
    no port,
    no module a port imports (at any depth) and no module whose error the
    service error wraps (anything `domain/error.rs` imports, at any depth)
    does. The others return their own errors (`PolicyError`,
    `RepositoryError`, `InvalidInput`, a `FieldViolation`...), which the
    service error wraps with `#[from]`. On the graph of domain/X.

A `pub use` only passes names on: it is not an arrow itself, and an import of
a re-exported name counts as an arrow to the module that defines it.

Exits 1 and prints each violation when a rule is broken, 0 otherwise.
No dependencies beyond Python 3.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPTHS = (2, 3)  # domain/X, domain/X/Y
# The rooms beside services/ whose code must not reach into a service's outbound/.
OUTSIDE_ROOMS = ("crates", "cli", "test-servers", "conformance")

USE_RE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M | re.S)
INLINE_RE = re.compile(r"(?<![\w:])((?:[a-z_][a-z0-9_]*)(?:::(?:[A-Za-z_][A-Za-z0-9_]*|\*))+)")
CFG_TEST_MOD_RE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
CFG_TEST_MOD_DECL_RE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def strip_comments_and_strings(text):
    """Blanks comments and string literals so that paths inside them are not read."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    out.append("\n" if text[i] == "\n" else "")
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 20] or "") and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4] or ""):
            m = re.match(r"'(\\.|[^\\'])'", text[i:])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_test_modules(text):
    """Drops `#[cfg(test)] mod x { ... }` blocks (text already free of comments)."""
    while True:
        m = CFG_TEST_MOD_RE.search(text)
        if not m:
            return text
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[: m.start()] + text[i:]


def split_top(body, sep=","):
    parts, depth, cur = [], 0, []
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_use(tree, prefix=()):
    """`a::{b, c::{d as e, self}}` -> [(a, b), (a, c, d), (a, c)]."""
    tree = re.sub(r"\s+", " ", tree).strip()
    brace = tree.find("{")
    if brace < 0:
        path = tree.split(" as ")[0].strip()
        segs = [s for s in path.split("::") if s]
        if segs == ["self"]:
            return [prefix]
        return [prefix + tuple(segs)]
    head = [s for s in tree[:brace].strip().rstrip(":").split("::") if s]
    inner = tree[brace + 1: tree.rfind("}")]
    paths = []
    for part in split_top(inner):
        paths.extend(expand_use(part, prefix + tuple(head)))
    return paths


class Crate:
    """One crate's `src/`: its module files, imports and re-exports."""

    def __init__(self, src):
        self.src = src
        self.files = {}  # module path (tuple) -> file path
        self.test_files = set()
        for dirpath, _, names in os.walk(src):
            for name in names:
                if not name.endswith(".rs"):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, src)[:-3].split(os.sep)
                if rel == ["main"] or rel[0] == "bin":
                    continue  # the binaries are crates of their own
                if rel[-1] == "mod" or rel == ["lib"]:
                    rel = rel[:-1]
                self.files[tuple(rel)] = full
        self.texts = {}
        for mod, path in self.files.items():
            with open(path, encoding="utf-8") as f:
                raw = strip_comments_and_strings(f.read())
            for m in CFG_TEST_MOD_DECL_RE.finditer(raw):
                self.test_files.add(mod + (m.group(1),))
            self.texts[mod] = strip_test_modules(raw)
        # A module declared `#[cfg(test)] mod x;` is a test file, with what is under it.
        self.test_files = {
            mod for mod in self.files if any(mod[: len(t)] == t for t in self.test_files)
        }
        self.uses = {}  # module -> [absolute path]
        self.reexports = {}  # module -> {name: absolute path}
        for mod, text in self.texts.items():
            if mod in self.test_files:
                continue
            uses, reexports = [], {}
            for m in USE_RE.finditer(text):
                public = bool(m.group(1))
                for path in expand_use(m.group(2)):
                    absolute = self.absolute(mod, path)
                    if absolute is None:
                        continue
                    if public:
                        if absolute and absolute[-1] != "*":
                            reexports[absolute[-1]] = absolute
                    else:
                        uses.append(absolute)
            code = USE_RE.sub("", text)
            for m in INLINE_RE.finditer(code):
                absolute = self.absolute(mod, tuple(m.group(1).split("::")))
                if absolute is not None:
                    uses.append(absolute)
            self.uses[mod] = uses
            self.reexports[mod] = reexports

    def absolute(self, mod, path):
        """The path from the crate root, or None for another crate."""
        if not path:
            return None
        if path[0] == "crate":
            return tuple(path[1:])
        if path[0] in ("super", "self"):
            base = list(mod)
            rest = list(path)
            while rest and rest[0] in ("super", "self"):
                if rest.pop(0) == "super":
                    if not base:
                        return None
                    base.pop()
            return tuple(base + rest)
        # A path through a child module declared in this file (`use start::X`).
        if mod + (path[0],) in self.files:
            return mod + tuple(path)
        return None

    def resolve(self, path, seen=None):
        """The module that defines what `path` names, following re-exports."""
        seen = seen or set()
        module = ()
        for i in range(len(path), 0, -1):
            if tuple(path[:i]) in self.files:
                module = tuple(path[:i])
                break
        rest = path[len(module):]
        if rest and rest[0] != "*":
            target = self.reexports.get(module, {}).get(rest[0])
            if target and (module, rest[0]) not in seen:
                seen.add((module, rest[0]))
                return self.resolve(target + tuple(rest[1:]), seen)
        return module


def node(module, depth):
    """The graph node of a module at `depth`: domain/X (2) or domain/X/Y (3)."""
    return "/".join(module[:depth])


def in_domain(module):
    return bool(module) and module[0] == "domain"


def is_port(module):
    return len(module) >= 2 and module[:2] == ("domain", "ports")


def domain_graph(crate, depth):
    edges = {}
    for mod, uses in crate.uses.items():
        if not in_domain(mod):
            continue
        src = node(mod, depth)
        for path in uses:
            target = crate.resolve(path)
            if not in_domain(target):
                continue
            dst = node(target, depth)
            if dst != src:
                edges.setdefault(src, {}).setdefault(dst, set()).add(
                    (os.path.relpath(crate.files[mod], ROOT), "::".join(path))
                )
    return edges


def circles(edges):
    """Tarjan's strongly connected components with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def check_service(service_dir, crate_name, others):
    problems = []
    crate = Crate(os.path.join(service_dir, "src"))
    for depth in DEPTHS:
        edges = domain_graph(crate, depth)
        for comp in circles(edges):
            lines = [f"circle between {', '.join(comp)}:"]
            members = set(comp)
            for src in comp:
                for dst, why in sorted(edges.get(src, {}).items()):
                    if dst in members:
                        file, path = sorted(why)[0]
                        lines.append(f"    {src} -> {dst} ({file}: {path})")
            problems.append("\n".join(lines))
    problems += port_problems(crate)
    problems += service_error_problems(crate)
    problems += inbound_problems(crate)
    problems += outside_problems(crate_name, others)
    return problems


def port_problems(crate):
    """Rule (b), on the graph of domain/X/Y."""
    problems = []
    depth = DEPTHS[-1]
    edges = domain_graph(crate, depth)
    port_users = {
        node(mod, depth)
        for mod, uses in crate.uses.items()
        if in_domain(mod) and not is_port(mod)
        and any(is_port(crate.resolve(p)) for p in uses)
    }
    for src, targets in sorted(edges.items()):
        if not src.startswith("domain/ports"):
            continue
        for dst, why in sorted(targets.items()):
            if dst in port_users:
                file, path = sorted(why)[0]
                problems.append(
                    f"port {src} imports {dst}, a use case (it imports a port) ({file}: {path})"
                )
    return problems


def service_error_problems(crate):
    """Rule (e), on the graph of domain/X."""
    edges = domain_graph(crate, DEPTHS[0])
    error = "domain/error"
    below = {n for n in edges if n.startswith("domain/ports")} | set(edges.get(error, {}))
    stack = list(below)
    while stack:
        for dst in edges.get(stack.pop(), {}):
            if dst not in below and dst != error:
                below.add(dst)
                stack.append(dst)
    depth = DEPTHS[0]
    def port_of_any_module(module):
        return is_port(module) or (in_domain(module) and "ports" in module[2:])

    use_cases = {
        node(mod, depth)
        for mod, uses in crate.uses.items()
        if in_domain(mod) and not is_port(mod)
        and any(port_of_any_module(crate.resolve(p)) for p in uses)
    }
    problems = []
    for src, targets in sorted(edges.items()):
        why = targets.get(error)
        if not why:
            continue
        file, path = sorted(why)[0]
        if src in below:
            problems.append(
                f"{src} imports the service error, which sits above it (at or below "
                f"the ports, or wrapped by it): return its own error ({file}: {path})"
            )
        elif src not in use_cases:
            problems.append(
                f"{src} imports the service error but is no use case (it imports no "
                f"port): return its own error ({file}: {path})"
            )
    return problems


def inbound_problems(crate):
    """Rule (c): no module under `inbound` imports one under `outbound`."""
    problems = []
    for mod, uses in sorted(crate.uses.items()):
        if not mod or mod[0] != "inbound":
            continue
        for path in sorted(set(uses)):
            target = crate.resolve(path)
            if path[0] == "outbound" or (target and target[0] == "outbound"):
                file = os.path.relpath(crate.files[mod], ROOT)
                problems.append(f"inbound imports outbound ({file}: {'::'.join(path)})")
    return problems


def outside_problems(crate_name, others):
    """Rule (d): no other room or service imports the crate's `outbound`."""
    problems = []
    pattern = re.compile(r"\b" + crate_name + r"\s*::\s*(?:\{[^}]*\b)?outbound\b")
    for top in others:
        for dirpath, _, names in os.walk(top):
            if "/target" in dirpath or "/.git" in dirpath:
                continue
            for name in names:
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    text = strip_comments_and_strings(f.read())
                if pattern.search(text):
                    problems.append(
                        f"{os.path.relpath(path, ROOT)} imports {crate_name}::outbound"
                    )
    return problems


def crate_name_of(service_dir):
    with open(os.path.join(service_dir, "Cargo.toml"), encoding="utf-8") as f:
        m = re.search(r'^name\s*=\s*"([^"]+)"', f.read(), re.M)
    return m.group(1).replace("-", "_")


def main(argv):
    services_root = os.path.join(ROOT, "services")
    every = sorted(
        os.path.join(services_root, d)
        for d in os.listdir(services_root)
        if os.path.isfile(os.path.join(services_root, d, "Cargo.toml"))
    )
    chosen = [os.path.abspath(a) for a in argv] or every
    failed = False
    for service in chosen:
        others = [os.path.join(ROOT, room) for room in OUTSIDE_ROOMS]
        others += [s for s in every if s != service]
        problems = check_service(service, crate_name_of(service), others)
        name = os.path.relpath(service, ROOT)
        if problems:
            failed = True
            print(f"import-graph: {name} breaks the import rules:", file=sys.stderr)
            for p in problems:
                print("  " + p, file=sys.stderr)
        else:
            print(f"import-graph: {name}: no circle in domain/ at any depth, no port imports "
                  "a use case, the service error above what it wraps, inbound/ does not "
                  "import outbound/, no outside import of outbound/")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
