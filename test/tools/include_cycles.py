#!/usr/bin/env python3
"""Fails when the project's own modules include each other in a loop.

A module is a header and its source file (connection.h and connection.cpp are one module
"pg/remote/connection"): a source that includes a header whose module includes the source's
header back is a loop as much as two headers that include each other. Every `#include "..."`
of a file under the given root is resolved against the root (the include path of the build is
src/), then against the including file's folder; includes that resolve to no file of the tree
(PostgreSQL's, libpq's) are left out. A cycle is printed as a chain of modules and the exit
status is 1.

Usage: include_cycles.py [ROOT]   (default: src)
include_cycles.py --self-test checks the search on a small graph.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp")


def include_graph(root):
    """Module -> the project modules its files include (paths relative to root, no suffix)."""
    graph = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.relpath(os.path.join(folder, name), root)
            module = os.path.splitext(path)[0]
            with open(os.path.join(root, path), encoding="utf-8") as f:
                text = f.read()
            targets = graph.setdefault(module, [])
            for included in INCLUDE.findall(text):
                for candidate in (included, os.path.join(os.path.dirname(path), included)):
                    candidate = os.path.normpath(candidate)
                    if os.path.isfile(os.path.join(root, candidate)):
                        target = os.path.splitext(candidate)[0]
                        if target != module and target not in targets:
                            targets.append(target)
                        break
    return graph


def find_cycle(graph):
    """One cycle as a list of nodes (first == last), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {node: WHITE for node in graph}
    stack = []

    def visit(node):
        color[node] = GREY
        stack.append(node)
        for nxt in graph.get(node, ()):
            state = color.get(nxt, BLACK)
            if state == GREY:
                return stack[stack.index(nxt):] + [nxt]
            if state == WHITE:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        color[node] = BLACK
        return None

    for node in sorted(graph):
        if color[node] == WHITE:
            found = visit(node)
            if found:
                return found
    return None


def self_test():
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    assert find_cycle({"a": ["b"], "b": ["a"]}) == ["a", "b", "a"]
    assert find_cycle({"a": ["a"]}) == ["a", "a"]
    assert find_cycle({"x": ["a"], "a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    print("include_cycles: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    root = argv[1] if len(argv) > 1 else "src"
    graph = include_graph(root)
    cycle = find_cycle(graph)
    if cycle:
        print("include loop in %s: %s" % (root, " -> ".join(cycle)), file=sys.stderr)
        return 1
    print("include_cycles: %d modules under %s, no loop" % (len(graph), root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
