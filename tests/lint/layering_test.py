#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# layering_test: every #include "folder/..." of a source file names its own folder or one below it, in
# the order DESIGN.md states (its "Layers" block is the one source of that order).
"""Usage: layering_test.py SOURCE_DIR

Reads the layers from DESIGN.md: the lines of the fenced block after the heading "## Layers", top
first; folders on one line are peers (neither may include the other). A file belongs to the longest
listed folder its path starts with (gateway/http/x.cc is gateway/http's, gateway/x.cc gateway's).
tests/, bench/ and folders not listed may include anything; a listed folder that includes a folder
above it, a peer, or an unlisted one is reported, one line per include, and the test fails.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".h", ".cc", ".c", ".hpp", ".cpp")


def read_layers(design):
    """-> {folder: rank}, rank 0 at the top."""
    lines = open(design, encoding="utf-8").read().splitlines()
    try:
        start = lines.index("## Layers")
    except ValueError:
        sys.exit("layering: DESIGN.md has no '## Layers' section")
    fence = [i for i in range(start, len(lines)) if lines[i].startswith("```")]
    if len(fence) < 2:
        sys.exit("layering: the '## Layers' section has no fenced block")
    ranks = {}
    for rank, line in enumerate(lines[fence[0] + 1:fence[1]]):
        for folder in line.split("#")[0].split():
            ranks[folder.rstrip("/")] = rank
    if not ranks:
        sys.exit("layering: the '## Layers' block is empty")
    return ranks


def owner(path, ranks):
    """The listed folder path belongs to (the longest prefix), or None."""
    best = None
    for folder in ranks:
        if (path == folder or path.startswith(folder + "/")) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    ranks = read_layers(os.path.join(root, "DESIGN.md"))
    problems = []
    checked = 0
    for folder in sorted(ranks):
        top = os.path.join(root, folder)
        for dirpath, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                mine = owner(path, ranks)
                if mine != folder:
                    continue  # a nested listed folder's file: checked as that folder's
                checked += 1
                for n, line in enumerate(open(os.path.join(root, path), encoding="utf-8", errors="replace"), 1):
                    m = INCLUDE.match(line)
                    if not m or "/" not in m.group(1):
                        continue
                    target = owner(m.group(1), ranks)
                    if target == mine:
                        continue
                    if target is None:
                        if os.path.exists(os.path.join(root, m.group(1))):
                            problems.append("%s:%d: includes %s, which is in no layer" % (path, n, m.group(1)))
                        continue
                    if ranks[target] <= ranks[mine]:
                        how = "a peer" if ranks[target] == ranks[mine] else "a layer above it"
                        problems.append("%s:%d: %s includes %s (%s, %s)" % (path, n, mine, m.group(1), target, how))
    for p in problems:
        print(p)
    print("layering: %d files in %d folders checked, %d includes out of order" % (checked, len(ranks), len(problems)))
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
