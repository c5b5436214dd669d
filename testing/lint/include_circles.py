#!/usr/bin/env python3
"""Fails when files under a source folder include each other in a circle.

A file and its header are one unit (compute.c and compute.h are "compute"); a unit that includes,
through any chain of `#include "..."` lines, a unit that includes it back forms a circle. Paths in
an include are resolved as the compiler does here: beside the including file, then from the
folder given as the include root (the project's src/).

    include_circles.py SRC_DIR
prints every circle (its units, and one include line of each edge) and exits 1 when there is one.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCES = (".c", ".cc", ".h")


def units_and_edges(root):
    files = []
    for folder, _, names in os.walk(root):
        files += [os.path.join(folder, n) for n in names if n.endswith(SOURCES)]
    unit_of = {f: os.path.splitext(os.path.relpath(f, root))[0] for f in files}
    known = set(files)
    edges = {}  # unit -> {included unit: "file: #include line"}
    for f in files:
        with open(f, errors="replace") as text:
            body = text.read()
        for m in INCLUDE.finditer(body):
            for base in (os.path.dirname(f), root):
                target = os.path.normpath(os.path.join(base, m.group(1)))
                if target in known:
                    if unit_of[target] != unit_of[f]:
                        edges.setdefault(unit_of[f], {}).setdefault(
                            unit_of[target], f'{os.path.relpath(f, root)}: #include "{m.group(1)}"')
                    break
    return sorted(set(unit_of.values())), edges


def circles(units, edges):
    """Strongly connected groups of more than one unit (Tarjan's algorithm, without recursion)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in units:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: include_circles.py SRC_DIR (a folder of .c, .cc and .h files)")
    root = os.path.normpath(sys.argv[1])
    units, edges = units_and_edges(root)
    found = circles(units, edges)
    for group in found:
        members = set(group)
        print(f"include circle of {len(group)} units: {' '.join(group)}")
        for unit in group:
            for target, line in sorted(edges.get(unit, {}).items()):
                if target in members:
                    print(f"  {line}")
    print(f"{len(units)} units, {len(found)} include circle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
