#!/usr/bin/env python3
"""Every contract clause the sources cite has a section in docs/api-semantics.md.

Comments, test names and docs cite clauses of kube-api-contract.md by tag (`R7`, `W9`,
ranges such as `P1-P9` or `S4–S6`, and in Python test names `test_w2_w9_...`). The text of
the contract lives outside the repository; docs/api-semantics.md says in the project's own
words what each cited clause means here. This check greps the product and test sources and
the docs for cited tags and fails, listing where each is cited, for any tag that has no
`### TAG` heading in that page.

Only the contract's clause families are recognised (C E K L N P R S W X followed by one or
two digits); a tag right after `%` (percent-encoded bytes such as `%C3`) or inside a word is
not a tag. Strings that look like tags but are not (a regex's literals L0..Ln, a User-Agent's
X11) are listed in NOT_TAGS by file.

Usage: check_api_semantics.py [repository root]   (default: two levels above this file)
"""
import os
import re
import sys

FAMILIES = "CEKLNPRSWX"
# A tag, or a range of tags of one family ("P1-P9", "S4–S6", "R1-10").
TAG = re.compile(r"(?<![%\w])([" + FAMILIES + r"])(\d{1,2})(?:[ ]?[-–][ ]?(?:\1)?(\d{1,2}))?(?!\w)")
# Python/Go test names that start with tags: test_w2_w9_watch_list..., test_P1_P2_P4_...
TEST_NAME = re.compile(r"\b(?:def |func )(?:test|Test)_?((?:[" + FAMILIES + FAMILIES.lower() + r"]\d{1,2}_)+)")
HEADING = re.compile(r"^### ([A-Z]{1,2}\d{1,2})\b", re.M)

DOC = "docs/api-semantics.md"
SELF = "tests/tools/check_api_semantics.py"  # its own docstring and tables name look-alikes
DIRS = ("cache", "watch", "proxy", "config", "cmd", "tests", "docs", "scripts")
EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".py", ".mjs", ".js", ".go", ".md", ".sh", ".txt",
              ".cmake", ".yaml", ".yml")
# Seed corpora hold arbitrary bytes; installed packages (any node_modules) are not ours.
SKIP_DIRS = ("tests/fuzz/corpus",)
# Look-alikes, by file (see "Tags that are not clauses" in docs/api-semantics.md).
NOT_TAGS = {
    "proxy/server/request_filter.h": {"L0", "L1"},    # the literals of a ^L0.*L1.*...Ln pattern
    "proxy/server/request_filter.cpp": {"L0"},
    "tests/unit/proxy/read_route_test.cpp": {"X11"},  # User-Agent "Mozilla/5.0 (X11)"
}


def cited_tags(text):
    """Yields (tag, line number) for every tag cited in `text`, ranges expanded."""
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in TAG.finditer(line):
            first = int(m.group(2))
            last = int(m.group(3)) if m.group(3) else first
            if last < first or last - first > 20:
                last = first
            for n in range(first, last + 1):
                yield m.group(1) + str(n), lineno
        for m in TEST_NAME.finditer(line):
            for tag in m.group(1).strip("_").split("_"):
                yield tag.upper(), lineno


def source_files(root):
    for top in DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root)
            dirnames[:] = sorted(d for d in dirnames
                                 if not d.startswith(".") and d != "node_modules"
                                 and os.path.join(rel_dir, d) not in SKIP_DIRS)
            for name in sorted(filenames):
                rel = os.path.join(rel_dir, name)
                if name.endswith(EXTENSIONS) and rel not in (DOC, SELF):
                    yield rel


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, DOC), encoding="utf-8") as f:
        doc = f.read()
    headings = HEADING.findall(doc)
    documented = set(headings)
    problems = []
    duplicates = sorted({h for h in headings if headings.count(h) > 1})
    if duplicates:
        problems.append("%s: more than one section for %s" % (DOC, ", ".join(duplicates)))

    citations = {}  # tag -> ["path:line", ...]
    for rel in source_files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        skip = NOT_TAGS.get(rel, set())
        for tag, lineno in cited_tags(text):
            if tag not in skip:
                citations.setdefault(tag, []).append("%s:%d" % (rel, lineno))

    missing = sorted((t for t in citations if t not in documented), key=lambda t: (t[0], int(t[1:])))
    for tag in missing:
        where = citations[tag]
        more = " and %d more" % (len(where) - 5) if len(where) > 5 else ""
        problems.append("%s is cited without a '### %s' section in %s: %s%s"
                        % (tag, tag, DOC, ", ".join(where[:5]), more))
    if problems:
        print("\n".join(problems))
        print("Add a section for each tag to %s (what the apiserver does, how the proxy keeps to it,"
              " which tests check it), or correct the citation if it names the wrong clause." % DOC)
        return 1
    print("%d cited clause tags, each with a section in %s" % (len(citations), DOC))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
