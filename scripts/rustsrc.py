"""Reading Rust sources as text for scripts/checks.sh: comments, strings and chars blanked
(newlines kept, so line numbers hold), and test code (`#[cfg(test)]` items, `#[test]`
functions, `tests.rs` / `tests/` files) told apart. No dependency beyond Python 3."""

import os
import re
import subprocess

CRATES = ["domain", "store", "projections", "kafka", "api", "bench"]


def rust_files(root):
    """Every tracked non-test `.rs` file under each crate's `src/`, by crate."""
    out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                          "--exclude-standard", "*.rs"], capture_output=True, text=True,
                         check=True).stdout.split()
    by_crate = {}
    for path in out:
        parts = path.split("/")
        if len(parts) < 3 or parts[0] not in CRATES or parts[1] != "src":
            continue
        if "tests" in parts[2:-1] or parts[-1] == "tests.rs":
            continue
        if not os.path.exists(os.path.join(root, path)):
            continue
        by_crate.setdefault(parts[0], []).append(path)
    return by_crate


def blank(src):
    """The source with comments, string and char literals replaced by spaces."""
    out = []
    i, n = 0, len(src)
    keep = lambda s: "".join(c if c == "\n" else " " for c in s)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(keep(src[i:j])); i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j): depth += 1; j += 2
                elif src.startswith("*/", j): depth -= 1; j += 2
                else: j += 1
            out.append(keep(src[i:j])); i = j
        elif re.match(r'b?r#*"', src[i:i + 40]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', src[i:])
            end = '"' + m.group(2)
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('"' + keep(src[i + 1:j - 1]) + '"'); i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('"' + keep(src[i + 1:j]) + '"'); i = j + 1
        elif c == "'":
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", src[i:i + 12])
            if m:
                out.append("' '"); i += len(m.group(0))
            else:  # a lifetime or label
                out.append(c); i += 1
        else:
            out.append(c); i += 1
    return "".join(out)


def match_brace(text, open_at):
    """Index of the `}` closing the `{` at `open_at`."""
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{": depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


TEST_ATTR = re.compile(r"#\[\s*(cfg\s*\(\s*test\s*\)|test|tokio::test\b[^\]]*|sqlx::test\b[^\]]*)\s*\]")


def test_spans(text):
    """(start, end) offsets of items marked as test code."""
    spans = []
    for m in TEST_ATTR.finditer(text):
        # the item after the attribute (and any further attributes): to its `;` or its block
        j = m.end()
        semi = text.find(";", j)
        brace = text.find("{", j)
        if brace < 0 or (0 <= semi < brace):
            spans.append((m.start(), semi))
        else:
            spans.append((m.start(), match_brace(text, brace)))
    return spans


def without_tests(text):
    """The blanked source with test items blanked too."""
    chars = list(text)
    for a, b in test_spans(text):
        for k in range(a, b + 1):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars)


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1
