#!/usr/bin/env python3
"""Import circles between two files of a crate. An edge A -> B: file A names, in a `use` or
in a path, an item of the module file B (`crate::…`, `super::…`, `self::…`, or a child
module's name in a `use`, such as a mod.rs `pub use child::X`). An item a module only
re-exports is followed to the file that defines it. Test code is left out. Prints each
circle; exits 1 if any besides the allowed pairs given as arguments (`crate:a.rs:b.rs`)."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from rustsrc import rust_files, blank, without_tests  # noqa: E402

root = os.path.join(os.path.dirname(__file__), "..")
allowed = {tuple(sorted(a.split(":")[1:])) + (a.split(":")[0],) for a in sys.argv[1:]}


def module_of(path):
    parts = path.split("/")[2:]
    if parts[-1] in ("lib.rs", "main.rs", "mod.rs"):
        parts = parts[:-1]
    else:
        parts[-1] = parts[-1][:-3]
    return tuple(parts)


def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as\w+$", "", tree) if "as" in tree.split("::")[-1] and False else tree.split(" as ")[0]]
    prefix, body = m.groups()
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            items.append(cur); cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    return [p for it in items if it for p in expand(prefix + it)]


USE = re.compile(r"\b(pub(\([^)]*\))?\s+)?use\s+([^;]+);")
PATH = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)")
failed = False
for crate, files in sorted(rust_files(root).items()):
    mods = {module_of(p): p for p in files}
    texts = {p: without_tests(blank(open(os.path.join(root, p)).read())) for p in files}
    # what each module re-exports: name -> absolute path it points to
    reexports = {}
    raw = {}
    for p, text in texts.items():
        me = module_of(p)
        children = {c[-1] for c in mods if c[:-1] == me and len(c) == len(me) + 1}
        paths = []
        for m in USE.finditer(text):
            for u in expand(m.group(3)):
                name = u.split("::")[-1]
                if " as " in m.group(3):
                    pass
                absolute = None
                segs = u.replace(" ", "").split("::")
                if segs[0] == "crate":
                    absolute = tuple(segs[1:])
                elif segs[0] in ("super", "self"):
                    base = list(me)
                    while segs and segs[0] in ("super", "self"):
                        if segs[0] == "super":
                            base = base[:-1]
                        segs = segs[1:]
                    absolute = tuple(base + segs)
                elif segs[0] in children:
                    absolute = me + tuple(segs)
                if absolute is None:
                    continue
                paths.append(absolute)
                if m.group(1):
                    reexports.setdefault(me, {})[name] = absolute
        child_path = re.compile(r"(?<![\w:])((?:%s)(?:::\w+)+)" % "|".join(children)) if children else None
        for m in list(PATH.finditer(text)) + (list(child_path.finditer(text)) if child_path else []):
            segs = m.group(1).split("::")
            base = list(me)
            if segs[0] == "crate":
                base, segs = [], segs[1:]
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
            paths.append(tuple(base + segs))
        raw[p] = paths

    def file_of(path, seen=0):
        """The file defining the item `path` names (following re-exports)."""
        for k in range(len(path), -1, -1):
            if path[:k] in mods:
                mod, rest = path[:k], path[k:]
                if rest and rest[0] in reexports.get(mod, {}) and seen < 10:
                    target = reexports[mod][rest[0]] + rest[1:]
                    if target != path:
                        return file_of(target, seen + 1)
                return mods[mod]
        return None

    edges = {p: set() for p in files}
    for p, paths in raw.items():
        for path in paths:
            f = file_of(path)
            if f and f != p:
                edges[p].add(f)
    # strongly connected components (Tarjan)
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in comps:
        pair = tuple(sorted(os.path.relpath(c, crate + "/src") for c in comp)) + (crate,)
        ok = len(comp) == 2 and pair in allowed
        if not ok:
            failed = True
        arrows = [f"{a} -> {b}" for a in comp for b in sorted(edges[a]) if b in comp]
        print(("allowed: " if ok else "circle: ") + ", ".join(arrows))
sys.exit(1 if failed else 0)
