#!/usr/bin/env python3
"""tests/labels_check.py - invariant and edge labels mean one thing, and
docs/memory-model.md matches the code.

    python3 tests/labels_check.py [repository root]   (ctest: labels_check, label unit)

The label scheme is in docs/architecture.md, "Labels". The tree is src/,
server/, bindings/, tools/ and tests/ (C sources and headers, and the Node
binding's JavaScript); docs/ is read for citations too. Checks:
  1. definitions: a numbered invariant is defined by a line "PREFIX-Xn." in a
     header comment of the tree (or "N. PREFIX-Xn:" in a numbered list of
     steps); no label is defined twice;
  2. citations: every prefixed label cited in the tree or the docs (ranges
     "PREFIX-X1..X4" included) is defined, in the tree or as an edge of
     docs/memory-model.md; no comment of the tree cites a numbered label
     without its prefix. Not labels, and so excepted: ARC's lists T1, T2,
     B1, B2 (evict/arc.c, evict/ghost.h), T0 (a time origin in tests), V8
     (the JavaScript engine), and the Node binding's cache tiers L1 and L2
     (bindings/node). Python and shell files are not read: their numbered
     tokens are protocol flags (memcached's meta T0, O1) and variables;
  3. code to doc (the engine, src/, only: the bindings' native code keeps
     its own edges in its headers): every label on an ordered atomic in
     src/ (the comment just above the statement, or on its lines) that is
     not an invariant is an edge listed in a table of docs/memory-model.md,
     and every ordered atomic (acquire, release, acq_rel, seq_cst, a fence)
     carries one;
  4. doc to code: every edge a table of docs/memory-model.md lists labels an
     ordered atomic in src/ (a row whose order is relaxed only, a hint such
     as X-SET, needs its label in a comment of src/);
  5. orders: a comment that says "Relaxed:" sits on a relaxed access, and one
     that says "LABEL: <order>" names an order the statement uses.
The checker first runs on built-in samples that must pass and fail, so a
broken pattern fails here instead of passing everything.
Exit status: 0 clean, 1 findings (each printed as file:line: message).
"""
import os
import re
import sys

ORDERS = {'RELAXED': 'relaxed', 'ACQUIRE': 'acquire', 'RELEASE': 'release',
          'ACQ_REL': 'acq_rel', 'SEQ_CST': 'seq_cst'}
NUMBERED = r'[A-Z][A-Z0-9]*-(?:SL|[A-Z])\d+[a-z]?'
NAMED = r'[RAL]-[A-Z]{2,}|X-SET|X-TAKE'
LABEL_RE = re.compile(r'(?<![\w.-])(' + NUMBERED + r'|' + NAMED + r')(?:\.\.(?:SL|[A-Z])?(\d+)([a-z]?))?(?![\w-])')
DEF_RE = re.compile(r'^\s*(?:/\*|\*)\s+(?:(' + NUMBERED + r')\.|\d+\.\s+(' + NUMBERED + r'):)\s')
ORDERED_RE = re.compile(r'LARDER__(ACQUIRE|RELEASE|ACQ_REL|SEQ_CST)\b|atomic_thread_fence|barrier_all_threads\(\)')
STMT_ORDER_RE = re.compile(r'LARDER__(RELAXED|ACQUIRE|RELEASE|ACQ_REL|SEQ_CST)\b')
# A numbered label without its prefix (not S3-FIFO, SSE2, XXH3, LZ4).
BARE_RE = re.compile(r'(?<![\w.-])(?:SL|[A-Z]{1,2})\d+[a-z]?\b(?!-FIFO)(?<!SSE2)(?<!XXH3)(?<!LZ4)')
ARC_NAMES = {'T1', 'T2', 'B1', 'B2'}  # ARC's lists, named as in the paper
NOT_LABELS = {'T0', 'V8'}  # a time origin; the JavaScript engine
NODE_TIERS = {'L1', 'L2'}  # the Node binding's JS-side cache and the engine
TREE = ('src', 'server', 'bindings', 'tools', 'tests')
SKIP_DIRS = ('node_modules', 'build')
SAYS_ORDER_RE = re.compile(r'(' + NUMBERED + r'|' + NAMED + r')(?: \([^)]*\))?:\s+(relaxed|acquire|release|seq_cst|acq_rel)\b')


def expand(m):
    """The labels a match names: one, or each of a range PREFIX-X1..X4."""
    first, last, suffix = m.group(1), m.group(2), m.group(3)
    if not last:
        return [first]
    head = re.match(r'(.*?)(\d+)[a-z]?$', first)
    return ['%s%d%s' % (head.group(1), n, suffix if n == int(last) else '')
            for n in range(int(head.group(2)), int(last) + 1)]


def labels_in(text):
    out = []
    for m in LABEL_RE.finditer(text):
        out.extend(expand(m))
    return out


def read(root, rel):
    with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
        return f.read().split('\n')


def files_under(root, top, exts):
    found = []
    for d, dirs, names in os.walk(os.path.join(root, top)):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for n in names:
            if n.endswith(exts):
                found.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(found)


def comment_text(line):
    """The comment parts of one line of C or JavaScript (block comments, and
    line comments outside strings)."""
    parts = re.findall(r'/\*(.*?)(?:\*/|$)', line)
    m = re.match(r'^(?:[^"\'`/]|/(?![/*])|"[^"]*"|\'[^\']*\'|`[^`]*`)*//(.*)$', line)
    if m and '/*' not in line:
        parts.append(m.group(1))
    s = line.strip()
    if not parts and (s.startswith('*') or (s and not s.startswith('/*') and s.endswith('*/'))):
        parts = [s.lstrip('*').rstrip('*/')]
    return ' '.join(parts)


def is_comment_line(line):
    s = line.strip()
    return s.startswith('/*') or s.startswith('*') or (s.endswith('*/') and '/*' not in s and not re.search(r'[;{}]\s*/\*', s))


def ordered_statements(lines):
    """(line number, comment text, orders used, is_fence) of each statement
    with an ordered atomic; the comment is the block just above the
    statement plus comments on its own lines."""
    out = []
    for i, line in enumerate(lines):
        code = re.sub(r'/\*.*?\*/', '', line)
        if not ORDERED_RE.search(code) or is_comment_line(line) or code.lstrip().startswith('#'):
            continue
        start = i
        while start > 0:
            prev = lines[start - 1]
            p = re.sub(r'/\*.*?\*/', '', prev).rstrip()
            if not p.strip() or is_comment_line(prev) or p.endswith((';', '{', '}', ':')):
                break
            start -= 1
        end = i
        while end + 1 < len(lines) and not re.sub(r'/\*.*?\*/', '', lines[end]).rstrip().endswith((';', '{', ')')):
            end += 1
        text = [comment_text(lines[k]) for k in range(start, end + 1)]
        k = start - 1
        # A declaration, an opening brace or a function's signature may
        # stand between a statement and its comment (at most 3 lines).
        hops = 0
        while hops < 3 and k >= 0 and lines[k].strip() and not is_comment_line(lines[k]):
            k -= 1
            hops += 1
        if k < 0 or not is_comment_line(lines[k]):
            k = start - 1
        block = []
        while k >= 0 and is_comment_line(lines[k]):
            block.insert(0, comment_text(lines[k]))
            if lines[k].strip().startswith('/*'):
                break
            k -= 1
        stmt = ' '.join(re.sub(r'/\*.*?\*/', '', lines[k]) for k in range(start, end + 1))
        orders = {ORDERS[o] for o in STMT_ORDER_RE.findall(stmt)}
        fence = 'atomic_thread_fence' in stmt or 'barrier_all_threads' in stmt
        comment = ' '.join(block + text)
        # The second store of a pair under one comment (R-HIT's sample and
        # head) carries the comment of the statement just above it.
        if out and out[-1][0] >= start - 1 and not block and not labels_in(comment):
            comment = out[-1][1] + ' ' + comment
        out.append((i + 1, comment, orders, fence))
    return out


def doc_edges(lines, relaxed=None):
    """Edge labels (first column of the tables) of docs/memory-model.md;
    relaxed (a set) gets those of rows whose order column names no order
    stronger than relaxed (hints such as X-SET: labelled, not ordered)."""
    edges = {}
    for n, line in enumerate(lines, 1):
        if not line.startswith('| ') or line.startswith('| label') or line.startswith('|---'):
            continue
        cells = line.split('|')
        first = cells[1].strip()
        if first.startswith('('):
            continue  # a row that cites edges listed elsewhere
        weak = len(cells) > 3 and not re.search(r'acquire|release|seq_cst|acq_rel|fence|membarrier',
                                                 cells[3])
        for lab in labels_in(first):
            edges.setdefault(lab, n)
            if weak and relaxed is not None:
                relaxed.add(lab)
    return edges


def tree_files(root):
    """The C sources and headers of the tree, and the Node binding's JS."""
    out = []
    for top in TREE:
        out += files_under(root, top, ('.c', '.h'))
    return out + files_under(root, 'bindings/node', ('.js',))


def bare_allowed(rel, word):
    if word in ARC_NAMES and rel in ('src/evict/arc.c', 'src/evict/ghost.h'):
        return True
    return word in NOT_LABELS or (word in NODE_TIERS and rel.startswith('bindings/node/'))


def check(root):
    findings = []
    src = files_under(root, 'src', ('.c', '.h'))
    tree = tree_files(root)
    invariants = {}
    for rel in tree:
        for n, line in enumerate(read(root, rel), 1):
            m = DEF_RE.match(line)
            if m:
                lab = m.group(1) or m.group(2)
                if lab in invariants:
                    findings.append('%s:%d: %s defined again (first at %s)' % (rel, n, lab, invariants[lab]))
                else:
                    invariants[lab] = '%s:%d' % (rel, n)
    mm = 'docs/memory-model.md'
    relaxed = set()
    edges = doc_edges(read(root, mm), relaxed)
    for lab in set(edges) & set(invariants):
        findings.append('%s:%d: %s is an edge here and an invariant at %s' % (mm, edges[lab], lab, invariants[lab]))
    prefixes = {l.split('-')[0] for l in list(invariants) + list(edges) if re.match(NUMBERED + '$', l)}

    cited = []
    for top in TREE + ('docs',):
        for rel in files_under(root, top, ('.c', '.h', '.md', '.py', '.sh', '.txt', '.js', '.java')):
            if rel == 'tests/labels_check.py':
                continue
            for n, line in enumerate(read(root, rel), 1):
                for lab in labels_in(line):
                    if re.match(NUMBERED + '$', lab) and lab.split('-')[0] in prefixes:
                        cited.append((rel, n, lab))
    for rel, n, lab in cited:
        if lab not in invariants and lab not in edges:
            findings.append('%s:%d: %s is cited but defined nowhere' % (rel, n, lab))
    for rel in tree:
        for n, line in enumerate(read(root, rel), 1):
            for m in BARE_RE.finditer(comment_text(line)):
                if not bare_allowed(rel, m.group(0)):
                    findings.append('%s:%d: %s has no module prefix' % (rel, n, m.group(0)))

    used = set()
    mentioned = set()
    for rel in src:
        for line in read(root, rel):
            mentioned.update(labels_in(comment_text(line)))
        for n, text, orders, fence in ordered_statements(read(root, rel)):
            labs = [l for l in labels_in(text) if l not in invariants]
            if not labs:
                findings.append('%s:%d: ordered atomic without an edge label' % (rel, n))
            for lab in labs:
                used.add(lab)
                if lab not in edges:
                    findings.append('%s:%d: edge %s is not in %s' % (rel, n, lab, mm))
            if re.match(r'\s*Relaxed\b', text) and orders - {'relaxed'}:
                findings.append('%s:%d: comment says relaxed, the code uses %s' % (rel, n, '/'.join(sorted(orders))))
            for m in SAYS_ORDER_RE.finditer(text):
                if orders and m.group(2) not in orders and not fence:
                    findings.append('%s:%d: comment says %s: %s, the code uses %s'
                                    % (rel, n, m.group(1), m.group(2), '/'.join(sorted(orders))))
    for lab, n in sorted(edges.items(), key=lambda kv: kv[1]):
        if lab in relaxed and lab in mentioned:
            continue  # a relaxed hint: labelled where it stands, orders nothing
        if lab not in used:
            findings.append('%s:%d: edge %s labels no ordered atomic in src/' % (mm, n, lab))
    return findings, len(invariants), len(edges), len(used)


def self_test():
    """The patterns on lines they must and must not match."""
    bad = []
    def want(cond, what):
        if not cond:
            bad.append(what)
    want(labels_in('(CACHE-B1..B3 in core/cache.c)') == ['CACHE-B1', 'CACHE-B2', 'CACHE-B3'], 'range')
    want(labels_in('WHEEL-W2b, R-SLOT/A-SLOT') == ['WHEEL-W2b', 'R-SLOT', 'A-SLOT'], 'list')
    want(labels_in('S3-FIFO, W-TinyLFU, X86-64, M1') == [], 'non-labels')
    want([m.group(0) for m in BARE_RE.finditer('S3-FIFO SSE2 XXH3 LZ4 GP-M1 (M1, X2b)')] == ['M1', 'X2b'],
         'bare labels')
    want(DEF_RE.match(' *   SLAB-S1. A free slot') is not None, 'definition')
    want(DEF_RE.match(' * (SLAB-S1) a citation') is None, 'citation is no definition')
    want(DEF_RE.match(' *   2. JGUARD-M1: membarrier') is not None, 'a step defines')
    want(DEF_RE.match(' * STRESS-S1: checked here') is None, 'a citation with a colon')
    want(comment_text('  x = "a // b"; // M1 (J2)') == ' M1 (J2)', 'JS line comment')
    want(comment_text('  s = "http://x/M1";') == '', 'no comment in a string')
    want(not bare_allowed('tests/unit/t.c', 'L1') and bare_allowed('bindings/node/index.js', 'L1'),
         'tiers only in the Node binding')
    sample = ['\t/* R-EV: release; the fields before A-EV. */',
              '\tatomic_store_explicit(&h->ev_head, head + 1,',
              '\t\t\t      LARDER__RELEASE);',
              '\t/* Relaxed: the seq bump is the futex word. */',
              '\tatomic_fetch_add_explicit(&c->room_seq, 1, LARDER__RELEASE);',
              '\tx = 1;',
              '\tatomic_thread_fence(LARDER__SEQ_CST);']
    st = ordered_statements(sample)
    want([s[0] for s in st] == [3, 5, 7], 'statements found: %s' % [s[0] for s in st])
    want(st and labels_in(st[0][1]) == ['R-EV', 'A-EV'] and st[0][2] == {'release'}, 'comment above')
    want(len(st) > 1 and st[1][1].strip().startswith('Relaxed') and st[1][2] == {'release'}, 'relaxed on release')
    want(len(st) > 2 and labels_in(st[2][1]) == [], 'unlabelled fence')
    want(doc_edges(['| R-EV / A-EV | x |', '| (GP-R2 / GP-A1) | y |', '| label | where |']) ==
         {'R-EV': 1, 'A-EV': 1}, 'doc rows')
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    bad = self_test()
    for b in bad:
        print('labels_check: pattern self-test failed: %s' % b)
    if bad:
        return 1
    findings, n_inv, n_edges, n_used = check(root)
    for f in findings:
        print(f)
    if findings:
        print('labels_check: FAIL: %d finding(s)' % len(findings))
        return 1
    print('labels_check: PASS (%d invariants defined once, %d edges in docs/memory-model.md, '
          '%d labelled in src/)' % (n_inv, n_edges, n_used))
    return 0


if __name__ == '__main__':
    sys.exit(main())
