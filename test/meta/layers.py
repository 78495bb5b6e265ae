#!/usr/bin/python3
"""The include layering of src/: dependencies run one way.

Prints "ok N - ..." / "not ok N - ..." lines, each violation on a line of its
own under its check, and "N passed, N failed".

* src/pg is in layers, low to high: base, types, keys, catalog, hwm, guard,
  ddl, api, worker, and src/pg/module.cpp on top. A file under src/pg/<folder>/ may
  include "pg/<other>/..." only when <other> is its own layer or a lower one
  (one check per file). No file sits directly in src/pg but module.cpp, and
  every "pg/..." or "core/..." include names a file that exists.
* src/core is server-free: none of its files includes anything from src/pg.
* No include cycle: a file and its header (x.cpp, x.hpp) are one module, and
  no module reaches itself through the "pg/..." and "core/..." includes of
  its files (each cycle found is printed as a path).
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
SRC = os.path.join(ROOT, "src")
LAYERS = ["base", "types", "keys", "catalog", "hwm", "guard", "ddl", "api", "worker"]
TOP = "module"  # src/pg/module.cpp, above every folder
INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:pg|core)/[^"]+)"', re.M)
n = 0
failed = 0


def check(desc, problems):
    global n, failed
    n += 1
    if problems:
        failed += 1
        print(f"not ok {n} - {desc}")
        for p in problems:
            print(f"#   {p}")
    else:
        print(f"ok {n} - {desc}")


def sources():
    """Every .cpp/.hpp under src/, as paths relative to src/ ("pg/keys/row_key.cpp")."""
    found = []
    for d, _, files in os.walk(SRC):
        for f in files:
            if f.endswith((".cpp", ".hpp", ".h", ".cc")):
                found.append(os.path.relpath(os.path.join(d, f), SRC))
    return sorted(found)


def includes(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def layer_of(rel):
    """(rank, name) of a path under pg/, None for a place the layering does not know."""
    parts = rel.split("/")
    if len(parts) == 2 and os.path.splitext(parts[1])[0] == TOP:
        return len(LAYERS), TOP
    if len(parts) >= 3 and parts[1] in LAYERS:
        return LAYERS.index(parts[1]), parts[1]
    return None


def module_of(rel):
    return os.path.splitext(rel)[0]


files = sources()
existing = set(files)
graph = {}  # module -> {module it includes: (file, include) that says so}
for rel in files:
    for inc in includes(rel):
        a, b = module_of(rel), module_of(inc)
        if a != b:
            graph.setdefault(a, {}).setdefault(b, (rel, inc))
        graph.setdefault(b, {})

# ---------------------------------------------------------------- src/pg layers
pg_files = [f for f in files if f.startswith("pg/")]
check("src/pg has files to check", [] if pg_files else ["no .cpp/.hpp under src/pg"])
for rel in pg_files:
    mine = layer_of(rel)
    problems = []
    if mine is None:
        problems.append(f"{rel} is in no layer (folders: {', '.join(LAYERS)}; or src/pg/{TOP}.cpp)")
    for inc in includes(rel):
        if inc not in existing:
            problems.append(f'#include "{inc}": no such file under src/')
            continue
        if not inc.startswith("pg/") or mine is None:
            continue
        theirs = layer_of(inc)
        if theirs is None:
            problems.append(f'#include "{inc}": in no layer')
        elif theirs[0] > mine[0]:
            problems.append(f'#include "{inc}": {theirs[1]} (layer {theirs[0] + 1}) is above '
                            f'{mine[1]} (layer {mine[0] + 1})')
    check(f"src/{rel} includes only its own layer or lower ones", problems)

# ---------------------------------------------------------------- src/core
core = [f for f in files if f.startswith("core/")]
check("src/core includes nothing from src/pg",
      [f'src/{rel}: #include "{inc}"' for rel in core for inc in includes(rel) if inc.startswith("pg/")])


# ---------------------------------------------------------------- cycles
def strongly_connected(graph):
    """Tarjan's algorithm, iterative; the components with more than one module."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def a_cycle(graph, comp):
    """One cycle through the component's first module, as a list of modules."""
    members, start = set(comp), comp[0]
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]  # start, ..., v, start
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [start]


problems = []
for comp in strongly_connected(graph):
    cycle = a_cycle(graph, comp)
    problems.append("cycle: " + " -> ".join(cycle))
    for a, b in zip(cycle, cycle[1:]):
        rel, inc = graph[a][b]
        problems.append(f'    src/{rel}: #include "{inc}"')
    # Every include inside the group: breaking the cycle means removing some of these.
    inside = [(a, b) for a in comp for b in sorted(graph[a]) if b in comp]
    if len(inside) > len(cycle) - 1:
        problems.append(f"    every include among {', '.join(comp)}:")
        problems.extend(f'      src/{graph[a][b][0]}: #include "{graph[a][b][1]}"' for a, b in inside)
check("no include cycle between modules (a .cpp and its .hpp are one module)", problems)

print(f"{n - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
