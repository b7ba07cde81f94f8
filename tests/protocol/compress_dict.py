#!/usr/bin/env python3
"""tests/protocol/compress_dict.py - larderd's --compress-dict (the engine's
compression dictionary mode: train, none, file:<path>).

Usage: compress_dict.py LARDERD

Checks, each against a fresh server on a free port:
  - the command line: a bad mode, a missing, empty or oversize file, a file
    that starts as a zstd dictionary but is not one, and --compress-dict
    without --compress-min are refused at start-up with a message naming the
    problem (exit status not 0), and --help describes the option;
  - none: the same JSON-like items read back whole and no dictionary ever
    exists (larder_dict_bytes is 0: in this mode the engine never makes one);
  - file:<path> (raw sample content): the dictionary exists before the first
    write, the items read back whole and hold well under the bytes they
    hold with none (the dictionary is used from the first write, so this
    does not depend on when the server's background thread runs);
  - train (and the default, no flag): the items read back whole; the
    dictionary appears once the server's background thread has trained it,
    polled with a generous deadline (it says nothing about how soon), and
    items written after it read back whole too.
Nothing sleeps to synchronise.
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

from larderd_client import Conn, flushed, stop
from loopback import run_driver, serve

ITEMS = 2000
DEADLINE = 60.0
FIELDS = [b"user_id", b"session", b"created_at", b"country", b"plan", b"last_seen",
          b"device", b"locale", b"referrer", b"score"]


def json_value(rng):
    """A 150-600 byte JSON-like document: shared field names, varying values."""
    parts = []
    for f in rng.sample(FIELDS, rng.randrange(5, len(FIELDS) + 1)):
        parts.append(b'"%s":"%s"' % (f, b"%x" % rng.getrandbits(rng.choice([16, 32, 64]))))
    doc = b"{" + b",".join(parts) + b',"note":"' + b"lorem ipsum dolor " * rng.randrange(1, 20) + b'"}'
    return doc


def start(larderd, extra):
    return serve([larderd, "-l", "127.0.0.1", "-t", "2", "-m", "128", "--compress-min=64"] +
                 extra, stderr=subprocess.PIPE, text=True)


def fill(c, rng, prefix, n):
    items = {}
    for i in range(n):
        key = b"%s:%d" % (prefix, i)
        value = json_value(rng) if i % 10 else os.urandom(rng.randrange(64, 700))
        flags = rng.randrange(1 << 32)
        c.set(key, flags, 0, value)
        items[key] = (flags, value)
    return items


def check(c, items, what):
    bad = sum(c.get(k) != v for k, v in items.items())
    if bad:
        raise RuntimeError("%s: %d of %d items do not read back whole" % (what, bad, len(items)))


def poll_stat(c, name, pred, what):
    deadline = time.monotonic() + DEADLINE
    while True:
        v = c.stat(name)
        if pred(v):
            return v
        if time.monotonic() > deadline:
            raise RuntimeError("%s: %s is still %r after %d s" % (what, name.decode(), v, DEADLINE))
        time.sleep(0.05)  # a poll interval


def refused(larderd, args, needle):
    try:
        r = subprocess.run([larderd, "-p", "-1", "-l", "127.0.0.1"] + args,
                           capture_output=True, text=True, timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        raise RuntimeError("larderd %s was not refused: it ran" % " ".join(args))
    if r.returncode == 0 or needle not in r.stderr:
        raise RuntimeError("larderd %s: exit %d, %r (wanted a message with %r)"
                           % (" ".join(args), r.returncode, r.stderr, needle))


def command_line(larderd, tmp):
    help_text = subprocess.run([larderd, "--help"], capture_output=True, text=True).stdout
    if "--compress-dict=<mode>" not in help_text or "file:<path>" not in help_text:
        raise RuntimeError("--help does not describe --compress-dict")
    empty, big, bad = (os.path.join(tmp, n) for n in ("empty", "big", "bad"))
    open(empty, "wb").close()
    open(big, "wb").write(b"x" * ((1 << 20) + 1))
    open(bad, "wb").write(b"\x37\xa4\x30\xec" + b"not a dictionary" * 10)
    refused(larderd, ["--compress-min=64", "--compress-dict=lz4"], "bad --compress-dict value")
    refused(larderd, ["--compress-min=64", "--compress-dict=file:"], "bad --compress-dict value")
    refused(larderd, ["--compress-dict=none"], "needs --compress-min")
    refused(larderd, ["--compress-min=64", "--compress-dict=file:" + os.path.join(tmp, "none")],
            "No such file")
    refused(larderd, ["--compress-min=64", "--compress-dict=file:" + empty], "empty")
    refused(larderd, ["--compress-min=64", "--compress-dict=file:" + big], "too large")
    refused(larderd, ["--compress-min=64", "--compress-dict=file:" + bad], "does not parse")


def mode_none(larderd):
    p, port = start(larderd, ["--compress-dict=none"])
    c = Conn(port)
    items = fill(c, random.Random(5), b"n", ITEMS)
    check(c, items, "none")
    if c.stat(b"larder_dict_bytes") != 0:
        raise RuntimeError("none: a dictionary exists")
    used = flushed(lambda: c.stat(b"bytes"))
    stop(p, signal.SIGINT)
    return used


def mode_file(larderd, tmp, used_none):
    path = os.path.join(tmp, "dict")
    rng = random.Random(99)  # other documents than the ones stored
    open(path, "wb").write(b"".join(json_value(rng) for _ in range(40)))
    p, port = start(larderd, ["--compress-dict=file:" + path])
    c = Conn(port)
    if not c.stat(b"larder_dict_bytes") > 0:
        raise RuntimeError("file: no dictionary before the first write")
    items = fill(c, random.Random(5), b"n", ITEMS)
    check(c, items, "file")
    used = flushed(lambda: c.stat(b"bytes"))
    stop(p, signal.SIGINT)
    # Measured about 0.5x; 0.8 leaves room for statistics that lag a few items.
    if not used < used_none * 0.8:
        raise RuntimeError("file: %d bytes held, none %d: the dictionary saved too little"
                           % (used, used_none))
    return used


def mode_train(larderd, extra):
    p, port = start(larderd, extra)
    c = Conn(port)
    items = fill(c, random.Random(6), b"t", ITEMS)
    check(c, items, "train %s" % extra)
    poll_stat(c, b"larder_dict_bytes", lambda v: v > 0, "train %s" % extra)
    items.update(fill(c, random.Random(7), b"after", ITEMS // 4))
    check(c, items, "train %s, after training" % extra)
    stop(p, signal.SIGINT)


def main():
    larderd = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        command_line(larderd, tmp)
        print("command line: bad modes and files refused with a message")
        used_none = mode_none(larderd)
        used_file = mode_file(larderd, tmp, used_none)
        print("none and file: items whole; %d bytes held with the file's dictionary, %d with none"
              % (used_file, used_none))
        mode_train(larderd, ["--compress-dict=train"])
        mode_train(larderd, [])
        print("train (flag and default): items whole before and after the dictionary appeared")
    print("PASS")


if __name__ == "__main__":
    run_driver(main)
