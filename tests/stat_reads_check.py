#!/usr/bin/env python3
"""tests/stat_reads_check.py - no test reads a counter the maintainer keeps
right after a write without waiting for the maintainer first.

    python3 tests/stat_reads_check.py [repository root]   (ctest: stat_reads_check, label unit)

The maintainer counts entries and removals a batching window after the
writes (include/larder.h, larder_flush): a test that writes and then reads
LARDER_STAT_ENTRIES, or a removal cause's counter, or the index's resizes,
without larder_flush (or a quiesce) between, passes on an idle machine and
fails once in a hundred runs on a loaded one (test_audit_warm.c failed the
CI of 03b293c so). This check finds such reads in the C tests (tests/unit,
tests/stress, tests/sim, tests/model).

Rule, per function: after a write (a public write, larder_clear,
larder_set_capacity, larder_load, a clock advance that makes entries due,
threads joined or run, or a file-local helper that does one of those), a
th_stat() read of a lagging counter needs a settle first: larder_flush,
larder__test_flush, th_flush, th_quiesce, larder__test_quiesce, th_check_accounting,
th_check_memory_audit, th_wait_until (a bounded wait for the condition), or
a file-local helper that calls one of those. Exempt: reads inside a
printf/fprintf (they only describe), and a read marked exact by
construction with a comment "stat-exact: <why>" on its line or the line
above.

Lagging counters: ENTRIES, EVICTIONS, EXPIRATIONS, REMOVALS, REPLACEMENTS,
CLEARED, LIVE_BYTES, INDEX_RESIZES, INDEX_SHRINKS. Not checked: USED_BYTES
and the page counters (the writer counts its allocation at once; only
frees lag, and the tests that bound them quiesce, or bound them loosely),
and reads of an array filled by larder_stats() (few; each follows a flush
today).

Not guaranteed: the scan is by lines in source order, within one function;
a write in a loop's later lines before a read in its first ones, and
writes made by a caller before it calls a helper that reads, are not seen.
It finds the plain pattern, the one that failed, without false alarms on
the tree; it does not prove a test race-free.

The checker first runs on built-in samples that must pass and fail, so a
broken pattern fails here instead of passing everything.
Exit status: 0 clean, 1 findings (each printed as file:line: message).
"""
import os
import re
import sys

LAGGING = ('ENTRIES', 'EVICTIONS', 'EXPIRATIONS', 'REMOVALS', 'REPLACEMENTS', 'CLEARED',
           'LIVE_BYTES', 'INDEX_RESIZES', 'INDEX_SHRINKS')
READ_RE = re.compile(r'\bth_stat\s*\([^,;]*,\s*LARDER_STAT_(' + '|'.join(LAGGING) + r')\b')
SETTLES = ('larder_flush', 'th_flush', 'larder__test_flush', 'th_quiesce', 'larder__test_quiesce',
           'th_check_accounting', 'th_check_memory_audit', 'th_wait_until')
WRITES = ('larder_put', 'larder_put_if_absent', 'larder_replace', 'larder_replace_if_equals',
          'larder_remove', 'larder_remove_if_equals', 'larder_touch', 'larder_clear',
          'larder_set_capacity', 'larder_load', 'th_clock_advance', 'th_run_threads',
          'pthread_join')
CALL_RE = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
ALLOW = 'stat-exact:'
DIRS = ('tests/unit', 'tests/stress', 'tests/sim', 'tests/model')


def functions(lines):
    """(name, first body line, last line) of each function defined at file
    scope: its body opens with '{' in column 0, as the house style puts it."""
    depth, start, name = 0, None, None
    for i, line in enumerate(lines):
        if depth == 0 and line.startswith('{'):
            start, name = i, None
            for j in range(i - 1, max(i - 8, -1), -1):
                m = CALL_RE.search(lines[j])
                if m and not lines[j][:1].isspace():
                    name = m.group(1)
                    break
        depth += line.count('{') - line.count('}')
        if start is not None and depth == 0:
            yield name, start, i
            start = None


def strip_comments(text):
    """The text with comments and string literals blanked, lines kept."""
    out = re.sub(r'/\*.*?\*/', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    out = re.sub(r'//[^\n]*', '', out)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', out)


def helpers(code, funcs, primitives, exclude=()):
    """File-local functions that call one of primitives, directly or through
    another such helper."""
    names = set(primitives)
    found = set()
    for _ in range(4):
        for name, s, e in funcs:
            if name and name not in names and name not in exclude:
                body = '\n'.join(code[s + 1:e + 1])
                if any(c in names for c in CALL_RE.findall(body)):
                    names.add(name)
                    found.add(name)
    return found


def statement_head(code, i, s):
    """The first word of the statement that line i belongs to."""
    j = i
    while j > s:
        prev = code[j - 1].rstrip()
        if prev.endswith((';', '{', '}')) or not prev:
            break
        j -= 1
    m = re.match(r'\s*(\w+)', code[j])
    return m.group(1) if m else ''


def check_text(path, text):
    findings = []
    raw = text.split('\n')
    code = strip_comments(text).split('\n')
    funcs = list(functions(code))
    settle = set(SETTLES) | helpers(code, funcs, SETTLES)
    write = set(WRITES) | helpers(code, funcs, WRITES, exclude=settle)
    for name, s, e in funcs:
        dirty = None  # the line of the last write not yet settled
        for i in range(s + 1, e + 1):
            # A read that starts on this line (its arguments may go on).
            for m in READ_RE.finditer('\n'.join(code[i:i + 3])):
                if m.start() >= len(code[i]):
                    break
                if dirty is None or ALLOW in raw[i] or ALLOW in raw[i - 1]:
                    continue
                if statement_head(code, i, s) in ('printf', 'fprintf'):
                    continue
                findings.append('%s:%d: LARDER_STAT_%s read after the write at line %d with '
                                'no larder_flush (or quiesce) between: it lags the write by '
                                'a batching window; flush first, or mark it "%s <why>"'
                                % (path, i + 1, m.group(1), dirty + 1, ALLOW))
            for call in CALL_RE.findall(code[i]):
                if call in settle:
                    dirty = None
                elif call in write:
                    dirty = i
    return findings


SAMPLES_PASS = [
    # a fresh cache: nothing written yet
    '{\n\tuint64_t e0 = th_stat(c, LARDER_STAT_ENTRIES);\n}\n',
    # flushed first
    '{\n\tlarder_put(c, "k", 1, "v", 1, 0);\n\tCHECK_RC(larder_flush(c, 9), 0);\n'
    '\tCHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 1);\n}\n',
    # a file-local helper that quiesces
    'static void settle(larder *c)\n{\n\tth_quiesce(c, 9);\n}\n'
    'static void t(void)\n{\n\tlarder_remove(c, "k", 1);\n\tsettle(c);\n'
    '\tCHECK_EQ(th_stat(c, LARDER_STAT_REMOVALS), 1);\n}\n',
    # printed only
    '{\n\tlarder_clear(c);\n\tprintf("%d\\n",\n\t       th_stat(c, LARDER_STAT_CLEARED));\n}\n',
    # exact by construction, said so
    '{\n\tlarder_put(c, "k", 1, "v", 1, 0);\n'
    '\t/* stat-exact: new keys replace nothing */\n'
    '\tuint64_t r0 = th_stat(c, LARDER_STAT_REPLACEMENTS);\n}\n',
    # counters the writer keeps itself
    '{\n\tlarder_put(c, "k", 1, "v", 1, 0);\n\tCHECK_EQ(th_stat(c, LARDER_STAT_WRITES), 1);\n}\n',
]
SAMPLES_FAIL = [
    # the CI failure of 03b293c, in short
    '{\n\tCHECK_RC(larder_load(c, path), LARDER_OK);\n'
    '\tCHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 150);\n}\n',
    # through a file-local helper that writes, across lines
    'static void fill(larder *c)\n{\n\tlarder_put(c, "k", 1, "v", 1, 0);\n}\n'
    'static void t(void)\n{\n\tfill(c);\n\tCHECK_EQ(th_stat(c,\n'
    '\t\t\tLARDER_STAT_EVICTIONS), 0);\n}\n',
    # settled, then written again
    '{\n\tth_quiesce(c, 9);\n\tlarder_clear(c);\n\tCHECK(th_stat(c, LARDER_STAT_CLEARED) > 0);\n}\n',
    # a flush in a comment is no flush
    '{\n\tth_run_threads(2, f, a, 8); /* then larder_flush() */\n'
    '\tCHECK_EQ(th_stat(c, LARDER_STAT_INDEX_RESIZES), 1);\n}\n',
]


def self_test():
    bad = []
    for i, s in enumerate(SAMPLES_PASS):
        if check_text('pass%d' % i, s):
            bad.append('sample pass%d was flagged' % i)
    for i, s in enumerate(SAMPLES_FAIL):
        if len(check_text('fail%d' % i, s)) != 1:
            bad.append('sample fail%d was not flagged once' % i)
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..')
    bad = self_test()
    for b in bad:
        print('stat_reads_check: pattern self-test failed: %s' % b)
    if bad:
        return 1
    findings, files = [], 0
    for d in DIRS:
        folder = os.path.join(root, d)
        for f in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if f.endswith('.c'):
                files += 1
                with open(os.path.join(folder, f), encoding='utf-8') as fh:
                    findings += check_text(os.path.join(d, f), fh.read())
    for f in findings:
        print(f)
    if findings:
        print('stat_reads_check: FAIL: %d finding(s)' % len(findings))
        return 1
    print('stat_reads_check: PASS (%d test files)' % files)
    return 0


if __name__ == '__main__':
    sys.exit(main())
