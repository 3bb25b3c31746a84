#!/usr/bin/env python3
"""Fails when a product source file (cache/, watch/, proxy/, config/, cmd/) is over 450
lines or holds a function body over 80 lines, or when a folder of the repository (tests
included) holds more than 40 source files directly: small files with one purpose, long
functions as named steps, folders that show their mechanisms. Prints the largest of each
either way.

A function is found the simple way, which suits this code base's formatting: a line at
any indentation that opens a brace at its end after a ')' (optionally followed by const,
override, noexcept, a trailing return type or an initializer list) and is not a control
statement; its length runs to the matching closing brace. Lambdas inside a function count
towards it.

  check_code_size.py [ROOT]
"""
import os
import re
import sys

DIRS = ("cache", "watch", "proxy", "config", "cmd")
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 80
MAX_FOLDER_SOURCES = 40
SOURCE_SUFFIXES = (".cpp", ".h", ".py", ".go", ".java", ".rs", ".mjs", ".js", ".sh")
SKIPPED = {".git", "build", "node_modules", ".tools", "target"}
CONTROL = re.compile(r"^\s*(if|else|for|while|switch|do|catch|try|namespace|struct|class|enum|union|extern)\b")
OPENS_FUNCTION = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->\s*[\w:<>,\s*&]+)?\s*\{\s*$")
INITIALIZER_START = re.compile(r"^\s*:\s*\w")


RAW_STRING = re.compile(r'R"([^(\s]*)\((.*?)\)\1"', re.S)


def blank_raw_strings(text):
    """Raw string literals (which may span lines and hold braces) as "" plus their newlines."""
    return RAW_STRING.sub(lambda m: '""' + "\n" * m.group(0).count("\n"), text)


def strip_strings_and_comments(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def functions(lines):
    """(first line number, length) of each outermost function body."""
    out = []
    depth = 0
    start = None
    start_depth = 0
    for number, raw in enumerate(lines, 1):
        line = strip_strings_and_comments(raw)
        if start is None and not CONTROL.match(line) and (
                OPENS_FUNCTION.search(line) or (INITIALIZER_START.match(line) and line.rstrip().endswith("{"))):
            start, start_depth = number, depth
        depth += line.count("{") - line.count("}")
        if start is not None and depth <= start_depth:
            out.append((start, number - start + 1))
            start = None
    return out


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    files, funcs = [], []
    for top in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if not name.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                lines = text.split("\n")
                code = blank_raw_strings(text).split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                files.append((len(lines), rel))
                funcs.extend((length, "%s:%d" % (rel, first)) for first, length in functions(code))
    files.sort(reverse=True)
    funcs.sort(reverse=True)
    print("largest files:", ", ".join("%s (%d)" % (rel, n) for n, rel in files[:3]))
    print("largest functions:", ", ".join("%s (%d)" % (where, n) for n, where in funcs[:3]))
    bad = ["%s: %d lines (at most %d)" % (rel, n, MAX_FILE_LINES) for n, rel in files if n > MAX_FILE_LINES]
    bad += ["%s: a function of %d lines (at most %d)" % (where, n, MAX_FUNCTION_LINES)
            for n, where in funcs if n > MAX_FUNCTION_LINES]
    bad += crowded_folders(root)
    for line in bad:
        print(line)
    return 1 if bad else 0


def crowded_folders(root):
    """Folders holding more than MAX_FOLDER_SOURCES source files directly."""
    out = []
    for dirpath, dirnames, names in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED and not d.startswith("build")]
        count = sum(1 for name in names if name.endswith(SOURCE_SUFFIXES))
        if count > MAX_FOLDER_SOURCES:
            out.append("%s/: %d source files (at most %d)" % (os.path.relpath(dirpath, root), count, MAX_FOLDER_SOURCES))
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv))
