#!/usr/bin/env python3
"""The longest functions of a Rust tree, by brace counting from each `fn`
line to its closing brace, unit tests (`#[cfg(test)]` onwards) left out.

    scripts/longest-functions.py [DIR] [N]     (default: src, 10)
"""
import re, sys, pathlib
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
out = []
for p in root.rglob("*.rs"):
    lines = p.read_text().split("\n")
    in_test = False
    i = 0
    while i < len(lines):
        l = lines[i]
        if re.match(r"\s*#\[cfg\(test\)\]", l):
            break
        m = re.match(r"\s*(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?fn\s+(\w+)", l)
        if m:
            depth = 0; started = False; j = i
            while j < len(lines):
                s = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j])
                s = re.sub(r"'(\\.|[^'\\])'", "''", s)
                s = s.split("//")[0]
                for c in s:
                    if c == "{": depth += 1; started = True
                    elif c == "}": depth -= 1
                if started and depth == 0: break
                if not started and s.rstrip().endswith(";"): break
                j += 1
            if started:
                out.append((j - i + 1, f"{p}:{i+1}", m.group(5)))
            i = j + 1 if started else i + 1
            continue
        i += 1
out.sort(reverse=True)
for length, where, name in out[:n]:
    print(f"{length:5} {name:30} {where}")
