#!/usr/bin/env python3
"""Fails when a Python module is longer than a limit (400 lines by default) or a class longer than
another (300 lines by default): files stay small enough to hold in one's head, and a class that
grows past that has taken on more than one concern.

A module's length is its number of lines; a class's, from its `class` line (or its first decorator)
to the last line of its body, both included, nested classes counted in their class too.

Usage: python_size.py [--max-module N] [--max-class N] [--list] PATH...   (directories: their *.py
files and their scripts whose first line names python; __pycache__ skipped)
Exits 1 and names each module or class over its limit (file:line, lines, name); --list prints every
module and class with its length. python_size.py --self-test checks the counting on the shapes below.
"""

import argparse
import ast
import os
import sys
import tempfile
from typing import Iterator, List, Tuple

Item = Tuple[str, int, int, str]  # (file, first line, lines, what)


def python_files(path: str) -> Iterator[str]:
    if not os.path.isdir(path):
        yield path
        return
    for base, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            full = os.path.join(base, name)
            if name.endswith(".py"):
                yield full
            elif "." not in name and os.access(full, os.X_OK):
                with open(full, "rb") as f:
                    first = f.readline()
                if first.startswith(b"#!") and b"python" in first:
                    yield full


def sizes(path: str) -> Tuple[Item, List[Item]]:
    """(the module's item, its classes' items)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    module = (path, 1, len(text.splitlines()), "module")
    classes = []
    for node in ast.walk(ast.parse(text, path)):
        if isinstance(node, ast.ClassDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            end = node.end_lineno or node.lineno
            classes.append((path, first, end - first + 1, "class " + node.name))
    return module, classes


def check(paths: List[str], max_module: int, max_class: int, show: bool) -> List[str]:
    """The lines to report: every item over its limit (or every item with show)."""
    out = []
    for top in paths:
        for path in python_files(top):
            module, classes = sizes(path)
            for item, limit in [(module, max_module)] + [(c, max_class) for c in classes]:
                if show or item[2] > limit:
                    out.append("%s:%d: %d lines: %s%s" % (item[0], item[1], item[2], item[3],
                                                          "" if item[2] <= limit else " (over %d)" % limit))
    return out


SAMPLE = '''import os


@decorated
class Small:
    def f(self) -> None:
        pass

    class Inner:
        x = 1


def g() -> int:
    class Local:
        y = 2
        z = 3
    return 1
'''


def self_test() -> int:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sample.py")
        with open(path, "w") as f:
            f.write(SAMPLE)
        script = os.path.join(d, "tool")
        with open(script, "w") as f:
            f.write("#!/usr/bin/env python3\nclass A:\n    pass\n")
        os.chmod(script, 0o755)
        with open(os.path.join(d, "notes"), "w") as f:
            f.write("class B: not python\n")
        module, classes = sizes(path)
        want = [(path, 4, 7, "class Small"), (path, 9, 2, "class Inner"), (path, 14, 3, "class Local")]
        got_files = sorted(os.path.basename(p) for p in python_files(d))
        problems = []
        if module[2] != 17:
            problems.append("module: %r" % (module,))
        if sorted(classes) != sorted(want):
            problems.append("classes: %r" % (classes,))
        if got_files != ["sample.py", "tool"]:
            problems.append("files: %r" % got_files)
        if check([d], 17, 7, False) != [] or len(check([d], 16, 6, False)) != 2:
            problems.append("limits: %r" % check([d], 16, 6, False))
    for p in problems:
        print("python_size self-test: FAIL " + p)
    print("python_size self-test: %s" % ("ok" if not problems else "%d problems" % len(problems)))
    return 1 if problems else 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--max-module", type=int, default=400)
    ap.add_argument("--max-class", type=int, default=300)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    lines = check(a.paths, a.max_module, a.max_class, a.list)
    for line in lines:
        print(line)
    over = [line for line in lines if "(over " in line]
    if not a.list:
        print("python_size: %s" % ("every module <= %d lines, every class <= %d" % (a.max_module, a.max_class)
                                   if not over else "%d over the limits" % len(over)))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
