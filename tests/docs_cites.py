#!/usr/bin/env python3
"""tests/docs_cites.py - every citation of a docs section names one that exists.

    python3 tests/docs_cites.py ROOT FILE...     (run by tests/docs_refs.sh)

Comments and docs send their reader to a section of a doc by its title, and
the docs move sections (the dated measurements go to docs/results/); a
citation left behind points at nothing. Fails, listing file:line of each
citation whose title names no part of the file it names. The forms read:
  - docs/X.md "Title", docs/X.md, "Title", docs/X.md: "Title", docs/X.md's
    "Title" and "Title" in docs/X.md (anywhere; docs/results/X.md alike;
    curly quotes too), the title free to run over lines of a comment
    (leading *, #, //, ; and -- are dropped when lines are joined);
  - the same with a bare X.md inside docs/*.md, relative to the citing
    file's folder (from docs/results/, X.md not there is docs/X.md);
  - Markdown links in *.md files: [text](X.md#anchor) and [text](#anchor)
    must name an anchor of the file, GitHub's (the heading lowercased,
    characters other than letters, digits, spaces, - and _ dropped, spaces
    made -, a repeated heading's suffixed -1, -2, ...), and every relative
    link ([text](X.md), [chart](X.svg)) a file that exists.
The rule for a title: after whitespace is collapsed and a trailing "..."
dropped, the cited title is a prefix of a named part of the named file: a
heading (a Markdown # line), a bold lead (a line or list item that starts
with **, up to the closing ** or the line's end), or the first cell of a
table row (tables whose rows are named, such as server.md's differences
from memcached); backticks are dropped from both. A citation of a file
that does not exist fails too.
Not checked: a title cited without its file ("below", "above"), single
quotes, and citations of code files.
The patterns are first tried on lines they must and must not match.
Exit status: 0 clean, 1 broken citations (or a broken pattern).
"""
import os
import re
import sys

# A citation of a doc by path and title; the title may be cut by a line end
# in a comment, so the text searched is the lines joined (see joined()).
CITE = re.compile(
    r'(?<![\w/.-])((?:docs/)?(?:results/)?[\w-]+\.md)(?:\'s)?[,:]?\s*\(?["\u201c]([^"\u201d]{1,200})["\u201d]')
CITE_IN = re.compile(
    r'["\u201c]([^"\u201d]{1,200})["\u201d],? in ((?:docs/)?(?:results/)?[\w-]+\.md)(?![\w/.-])')
LINK = re.compile(r'\]\(([\w./-]*)(?:#([\w-]+))?\)')
LEADER = re.compile(r'^\s*(?:\*+(?!\*)|#+|//+|;+|--)?\s?')

MUST_MATCH = [
    ('(docs/server.md, "Command line").', 'docs/server.md', 'Command line'),
    ('docs/bench.md "Flush beside writers"', 'docs/bench.md', 'Flush beside writers'),
    ('(docs/shards.md: "Tried and not kept":', 'docs/shards.md', 'Tried and not kept'),
    ('see server.md, "One connection"', 'server.md', 'One connection'),
    ('node.md\'s "Current figures"', 'node.md', 'Current figures'),
    ('docs/results/bench-history.md, \u201cShards\u201d', 'docs/results/bench-history.md', 'Shards'),
]
MUST_NOT_MATCH = [
    'docs/bench.md, the matrix',
    'see docs/server.md for "stats"',
    'http://example.org/x.md "T"',
    'the larder.h "API"',
]
IN_MUST_MATCH = [('("The writer\'s frame" in docs/bench.md).', 'docs/bench.md', "The writer's frame")]
IN_MUST_NOT_MATCH = ['"x" in docs/bench.mdx', 'the "x" key, in docs/bench.md']
LINK_MUST_MATCH = ['[the matrix](bench.md#the-matrix)', '[below](#limits)', '[x](../pool.md)',
                   '[code](../src/x.c#L3)',
                   '![chart](pool-shift.svg)']
LINK_MUST_NOT_MATCH = ['[site](https://example.org/#x)', '[mail](mailto:a@b)']


def pattern_misses(pattern, must, must_not, groups):
    """The cases `pattern` gets wrong: lines in `must` (text and, when
    groups names them, the expected (path, title) groups) and in must_not."""
    wrong = []
    for case in must:
        text, want = (case, None) if isinstance(case, str) else (case[0], case[1:])
        m = pattern.search(text)
        if not m or (want and tuple(m.group(g) for g in groups) != want):
            wrong.append(f'misses: {text}')
    wrong += [f'wrongly matches: {text}' for text in must_not if pattern.search(text)]
    return wrong


def self_test():
    wrong = (pattern_misses(CITE, MUST_MATCH, MUST_NOT_MATCH, (1, 2)) +
             pattern_misses(CITE_IN, IN_MUST_MATCH, IN_MUST_NOT_MATCH, (2, 1)) +
             pattern_misses(LINK, LINK_MUST_MATCH, LINK_MUST_NOT_MATCH, ()))
    for w in wrong:
        print(f'docs_cites: pattern {w}', file=sys.stderr)
    return 1 if wrong else 0


def norm(s):
    return ' '.join(s.replace('`', '').split())


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


_targets = {}


def targets(path):
    """(titles, anchors) of a doc: its headings and named table rows."""
    if path not in _targets:
        titles, anchors, seen = [], set(), {}
        with open(path, encoding='utf-8') as f:
            fence = False
            for line in f:
                if line.startswith('```'):
                    fence = not fence
                    continue
                if fence:
                    continue
                m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
                if m:
                    titles.append(norm(m.group(1)))
                    base = slug(m.group(1))
                    n = seen.get(base, 0)
                    seen[base] = n + 1
                    anchors.add(base if n == 0 else f'{base}-{n}')
                    continue
                m = re.match(r'\s*(?:[-*]\s+)?\*\*(.+?)(?:\*\*|$)', line)
                if m:
                    titles.append(norm(m.group(1)))
                elif line.startswith('|'):
                    titles.append(norm(line.split('|')[1]))
        _targets[path] = (titles, anchors)
    return _targets[path]


def joined(text, markdown):
    """The lines joined by spaces (comment leaders dropped outside Markdown),
    with the line number of each character's line."""
    parts, lines = [], []
    for n, line in enumerate(text.split('\n'), 1):
        piece = line.strip() if markdown else LEADER.sub('', line, count=1).strip()
        parts.append(piece + ' ')
        lines.extend([n] * (len(piece) + 1))
    return ''.join(parts), lines


def check(root, rel):
    path = os.path.join(root, rel)
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return [], 0
    markdown = rel.endswith('.md')
    flat, lines = joined(text, markdown)
    here = os.path.dirname(rel)
    hits, seen = [], 0
    found = [(m.start(), m.group(1), m.group(2)) for m in CITE.finditer(flat)]
    found += [(m.start(), m.group(2), m.group(1)) for m in CITE_IN.finditer(flat)]
    for at, doc, title in found:
        title = norm(title).removesuffix('...').rstrip()
        if doc.startswith('docs/'):
            target = doc
        elif markdown and rel.startswith('docs/'):
            target = os.path.normpath(os.path.join(here, doc))
            if not os.path.isfile(os.path.join(root, target)):
                target = os.path.join('docs', doc)
        else:
            continue
        full = os.path.join(root, target)
        seen += 1
        if not os.path.isfile(full):
            hits.append(f'{rel}:{lines[at]}: {doc} "{title}": no such file')
        elif not any(t.startswith(title) for t in targets(full)[0]):
            hits.append(f'{rel}:{lines[at]}: {doc} "{title}": no such heading')
    if markdown:
        for n, line in enumerate(text.split('\n'), 1):
            for m in LINK.finditer(line):
                doc, anchor = m.group(1), m.group(2)
                if not doc and not anchor:
                    continue
                target = os.path.normpath(os.path.join(here, doc)) if doc else rel
                full = os.path.join(root, target)
                seen += 1
                if not os.path.exists(full):
                    hits.append(f'{rel}:{n}: ({doc}): no such file')
                elif not target.endswith('.md'):
                    continue
                elif anchor and anchor not in targets(full)[1]:
                    hits.append(f'{rel}:{n}: ({doc}#{anchor}): no such anchor')
    return hits, seen


def main():
    if self_test():
        return 1
    root, files = sys.argv[1], sys.argv[2:]
    hits, seen = [], 0
    for rel in files:
        found, n = check(root, rel)
        hits += found
        seen += n
    if hits:
        print(f'docs_cites: FAIL: {len(hits)} citation(s) of a section that does not exist:')
        print('\n'.join(hits))
        return 1
    print(f'docs_cites: PASS ({seen} citations in {len(files)} files)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
