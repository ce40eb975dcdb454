#!/usr/bin/env python3
"""Non-test functions longer than a limit (default 80 lines, from `fn` to its closing brace),
in every crate's src/. Prints `file:line name lines`; exits 1 if any."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from rustsrc import rust_files, blank, without_tests, match_brace, line_of  # noqa: E402

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 80
root = os.path.join(os.path.dirname(__file__), "..")
FN = re.compile(r"\bfn\s+(\w+)")
found = []
for crate, files in sorted(rust_files(root).items()):
    for path in files:
        text = without_tests(blank(open(os.path.join(root, path)).read()))
        for m in FN.finditer(text):
            # the body: the first `{` after the signature, unless a `;` ends it first
            depth, j = 0, m.end()
            while j < len(text):
                ch = text[j]
                if ch in "(<[": depth += 1
                elif ch in ")>]": depth -= 1 if ch != ">" or text[j - 1] != "-" else 0
                elif ch == ";" and depth <= 0: j = -1; break
                elif ch == "{" and depth <= 0: break
                j += 1
            if j < 0 or j >= len(text):
                continue
            end = match_brace(text, j)
            first, last = line_of(text, m.start()), line_of(text, end)
            if last - first + 1 > LIMIT:
                found.append(f"{path}:{first} {m.group(1)} {last - first + 1} lines")
for f in found:
    print(f)
sys.exit(1 if found else 0)
