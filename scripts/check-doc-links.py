#!/usr/bin/env python3
"""Check every relative link and anchor in README.md and docs/*.md.

A link to a file must name a file or directory of the repository; a link
with `#anchor` must name a heading of its page, slugged as GitHub slugs
them (lower case, punctuation dropped but `-` and `_`, spaces to `-`, a
repeated heading numbered `-1`, `-2`, ...), or an `<a id=...>`/`<a
name=...>` of the page. Links inside code (fenced blocks, inline code)
are not links. Web links (http, https, mailto) are not checked.

Usage: scripts/check-doc-links.py [FILE.md ...]
(from the repository's root; without files, README.md and docs/*.md).
Prints one line per broken link, `FILE:LINE: TARGET: why`, and exits 1
if there is any.
"""

import glob
import os
import re
import sys

LINK = re.compile(r"\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
FENCE = re.compile(r"^\s*(```|~~~)")


def strip_code(lines):
    """The lines with fenced blocks blanked and inline code removed."""
    out = []
    fenced = False
    for line in lines:
        if FENCE.match(line):
            fenced = not fenced
            out.append("")
            continue
        if fenced:
            out.append("")
            continue
        # Four-space indented blocks after a blank line are code too; they
        # hold commands, never links, so blanking them is enough.
        if line.startswith("    ") and (not out or out[-1].strip() == "" or out[-1] == "\0"):
            out.append("\0")
            continue
        if out and out[-1] == "\0" and line.startswith("    "):
            out.append("\0")
            continue
        out.append(re.sub(r"`[^`]*`", "``", line))
    return ["" if line == "\0" else line for line in out]


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags go
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path in cache:
        return cache[path]
    found = set()
    counts = {}
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for name in HTML_ANCHOR.findall(line):
                found.add(name)
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    cache[path] = found
    return found


def check(page):
    broken = []
    with open(page, encoding="utf-8") as f:
        lines = strip_code(f.read().split("\n"))
    here = os.path.dirname(page)
    for number, line in enumerate(lines, 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(here, path)) if path else page
            if not os.path.exists(dest):
                broken.append(f"{page}:{number}: {target}: no such file")
                continue
            if anchor:
                if not dest.endswith(".md") or os.path.isdir(dest):
                    continue
                if anchor not in anchors(dest):
                    broken.append(f"{page}:{number}: {target}: no such heading in {dest}")
    return broken


def main():
    pages = sys.argv[1:] or ["README.md"] + sorted(glob.glob("docs/*.md"))
    broken = []
    for page in pages:
        broken += check(page)
    for line in broken:
        print(line)
    checked = ", ".join(pages) if len(pages) < 4 else f"{len(pages)} pages"
    print(f"{len(broken)} broken link(s) in {checked}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
