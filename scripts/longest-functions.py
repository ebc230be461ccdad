#!/usr/bin/env python3
"""The longest functions of a Rust tree, by brace counting from each `fn`
line to its closing brace, unit tests (the item after each `#[cfg(test)]`,
usually a `mod tests { … }`) left out, the code after them counted.

    scripts/longest-functions.py [DIR] [N]     (default: src, 10)
"""
import re, sys, pathlib


def item_end(lines, i):
    """The last line of the braced item starting at line i (or i for one
    that ends with `;` before any brace)."""
    depth = 0; started = False; j = i
    while j < len(lines):
        s = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j])
        s = re.sub(r"'(\\.|[^'\\])'", "''", s)
        s = s.split("//")[0]
        for c in s:
            if c == "{": depth += 1; started = True
            elif c == "}": depth -= 1
        if started and depth == 0: return j, True
        if not started and s.rstrip().endswith(";"): return j, False
        j += 1
    return j, started


root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
out = []
for p in root.rglob("*.rs"):
    lines = p.read_text().split("\n")
    i = 0
    while i < len(lines):
        l = lines[i]
        if re.match(r"\s*#\[cfg\(test\)\]", l):
            end, _ = item_end(lines, i + 1)
            i = end + 1
            continue
        m = re.match(r"\s*(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?fn\s+(\w+)", l)
        if m:
            j, started = item_end(lines, i)
            if started:
                out.append((j - i + 1, f"{p}:{i+1}", m.group(5)))
            i = j + 1 if started else i + 1
            continue
        i += 1
out.sort(reverse=True)
for length, where, name in out[:n]:
    print(f"{length:5} {name:30} {where}")
