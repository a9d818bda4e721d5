#!/usr/bin/env python3
"""Fails when a C++ function is longer than a limit (80 lines by default).

A function's length is counted from the first line of its signature to the line of its closing
brace, both included; lambdas and local classes count as part of the function that holds them.
The scan is lexical and relies on the committed .clang-format: comments, string and character
literals and preprocessor lines are skipped, and a '{' opens a function body when it ends a
declaration at namespace or class scope that has a parameter list.

Usage: function_length.py [--max N] [--list] PATH...   (directories: their *.cpp, *.h, *.hpp)
Exits 1 and names each function over the limit (file:line, lines, name); --list prints them all.
function_length.py --self-test checks the scanner on the tricky shapes below.
"""

import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".h", ".hpp")
# Declarations whose brace opens a scope that can hold functions.
SCOPE_KEYWORDS = re.compile(r"^(?:template\s*<.*>\s*)?(?:namespace|class|struct|union)\b|^extern\s*\"C")
# Statements that open a block but are no function.
NOT_A_FUNCTION = re.compile(r"^(?:enum|if|for|while|switch|do|else|try|catch)\b")
NAME = re.compile(r"([A-Za-z_~][\w:~<>]*(?:operator\s*\S+?)?)\s*\(")


def strip_code(text):
    """The text with comments, literals and preprocessor lines blanked (newlines kept)."""
    n = len(text)
    out, i, line_start = [], 0, True  # line_start: only blanks so far on this line
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end + len(delim) + 2
            out.append('""' + "".join(ch if ch == "\n" else " " for ch in text[i + 2:end]))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")  # digit separator, 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """Yields (first line, last line, name) of every function defined in the text (1-based)."""
    code = strip_code(text)
    # Each open brace: (kind, start line, name); kind is 'scope', 'function', 'block' or 'init'.
    stack = []
    statement = []  # the characters since the end of the previous statement at this level
    statement_line = None
    line = 1
    for pos, c in enumerate(code):
        if c == "\n":
            line += 1
            if statement:
                statement.append(" ")
            continue
        in_function = any(kind == "function" for kind, _, _ in stack)
        if c == "{":
            head = "".join(statement).strip()
            prev = code[pos - 1] if pos > 0 else ""
            if prev.isalnum() or prev in "_>" or head.endswith(("=", ",", "(", "return")):
                kind = "init"  # a braced initialiser inside an expression or an init list
            elif in_function:
                kind = "block"
            elif SCOPE_KEYWORDS.search(head) and "(" not in head.split("{")[0].split(":")[0]:
                kind = "scope"
            elif "(" in head and not NOT_A_FUNCTION.search(head) and "=" not in head.split("(")[0]:
                kind = "function"
            else:
                kind = "block"
            name = ""
            if kind == "function":
                match = NAME.search(head)
                name = match.group(1) if match else head[:40]
            stack.append((kind, statement_line or line, name))
            if kind != "init":
                statement, statement_line = [], None
            else:
                statement.append(c)
            continue
        if c == "}":
            if not stack:
                continue
            kind, start, name = stack.pop()
            if kind == "function":
                yield start, line, name
            if kind == "init":
                statement.append(c)
            else:
                statement, statement_line = [], None
            continue
        if c == ";" and not (stack and stack[-1][0] == "init"):
            statement, statement_line = [], None
            continue
        if not c.isspace() and statement_line is None:
            statement_line = line
        if statement_line is not None:
            statement.append(c)
        # An access specifier ends a statement.
        if c == ":" and "".join(statement).strip() in ("public:", "private:", "protected:"):
            statement, statement_line = [], None


# The scanner's own test: a source with the shapes that could mislead it, and what it must find.
SELF_TEST_SOURCE = r"""// a comment with { and }
#define BLOCK(x) { x }
extern "C" {
#include "postgres.h"
}
namespace outer {
namespace {
struct S {
    int x{1};
    S(int v) : x{v}, y_(v) {
        int q = 1;
    }
    int get() const { return x; }
    int y_;

  public:
    void f() {
        auto l = [&](int z) {
            return z;
        };
    }
};
const int table[] = {
    1, 2,
};
}  // namespace
template <typename T>
T g(T t) {
    if (t) {
        const char *s = "}{";
        char c = '{';
    }
    return T{t};
}
Foo::Foo(int a) : a_{a}, b_(std::vector<int>{1, 2}) {
    const char *raw = R"x(} { )x";
}
}  // namespace outer
"""
SELF_TEST_EXPECTED = [(10, 12, "S"), (13, 13, "get"), (17, 21, "f"), (27, 34, "g"),
                      (35, 37, "Foo::Foo")]


def self_test():
    found = sorted(functions(SELF_TEST_SOURCE))
    if found != SELF_TEST_EXPECTED:
        print(f"function length self-test failed: found {found}, expected {SELF_TEST_EXPECTED}",
              file=sys.stderr)
        return 1
    print(f"function length self-test: {len(found)} functions found as expected")
    return 0


def source_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                for name in sorted(names):
                    if name.endswith(SOURCE_SUFFIXES):
                        yield os.path.join(root, name)
        else:
            yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=80, help="the longest allowed function, in lines")
    parser.add_argument("--list", action="store_true", help="print every function with its length")
    parser.add_argument("--self-test", action="store_true", help="test the scanner and exit")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.paths:
        parser.error("give the files or directories to check")
    too_long = []
    count = 0
    for path in sorted(source_files(args.paths)):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for first, last, name in functions(text):
            count += 1
            length = last - first + 1
            if args.list:
                print(f"{path}:{first}: {length} lines: {name}")
            if length > args.max:
                too_long.append((path, first, length, name))
    for path, first, length, name in too_long:
        print(f"{path}:{first}: {name} is {length} lines long (at most {args.max})", file=sys.stderr)
    if too_long:
        print(f"function length: {len(too_long)} of {count} functions are longer than {args.max} "
              "lines: split them into named pieces", file=sys.stderr)
        return 1
    print(f"function length: {count} functions, none longer than {args.max} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
