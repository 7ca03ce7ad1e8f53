#!/usr/bin/python3
"""Docs true to the tree: every relative link in README.md and docs/*.md
names a file that exists (and, with #anchor, a heading of that file, in
GitHub's spelling), and every man page's SEE ALSO names pages and docs that
exist. Prints one line per broken reference; exit 1 if any, 0 if none.

Usage: check-doc-links.py SOURCE_TREE
"""
import os
import re
import sys


def slug(heading):
    # GitHub's anchor: lowercase, punctuation dropped (letters, digits, spaces,
    # hyphens and underscores kept), spaces to hyphens.
    h = heading.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^#{1,6} (.*)", line)
        if not m:
            continue
        s = slug(re.sub(r"\s#+\s*$", "", m.group(1)))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def markdown_problems(root, md):
    problems = []
    text = open(md, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    text = re.sub(r"`[^`\n]*`", "", text)  # nor does inline code
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = md if file_part == "" else os.path.normpath(os.path.join(os.path.dirname(md), file_part))
        rel = os.path.relpath(md, root)
        if not os.path.exists(dest):
            problems.append("%s: link to %s: no such file" % (rel, target))
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            problems.append("%s: link to %s: no such heading" % (rel, target))
    return problems


def man_problems(root, page):
    problems = []
    text = open(page, encoding="utf-8").read()
    m = re.search(r"^\.SH SEE ALSO\n(.*?)(?=^\.SH |\Z)", text, flags=re.S | re.M)
    rel = os.path.relpath(page, root)
    if not m:
        return ["%s: no SEE ALSO section" % rel]
    body = m.group(1)
    for name, sec in re.findall(r"^\.BR \\?%?([\w.-]+) \((\d)\)", body, flags=re.M):
        if name.startswith("wit") and not os.path.exists(os.path.join(root, "man", "%s.%s" % (name, sec))):
            problems.append("%s: SEE ALSO %s(%s): no such page in man/" % (rel, name, sec))
    for doc in re.findall(r"\\%(docs/[\w\\.-]+\.md)", body):
        doc = doc.replace("\\-", "-").replace("\\", "")
        if not os.path.exists(os.path.join(root, doc)):
            problems.append("%s: SEE ALSO %s: no such file" % (rel, doc))
    return problems


def main():
    root = sys.argv[1]
    problems = []
    mds = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    mds += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    for md in mds:
        problems += markdown_problems(root, md)
    man = os.path.join(root, "man")
    for f in sorted(os.listdir(man)):
        if re.search(r"\.\d$", f):
            problems += man_problems(root, os.path.join(man, f))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
