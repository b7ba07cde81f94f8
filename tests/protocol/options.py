#!/usr/bin/env python3
"""tests/protocol/options.py - memcached's command line, beside memcached 1.6.18.

Usage: options.py LARDERD MEMCACHED

Checks:
  - with -A -F -X on both servers, the replies to flush_all, lru_crawler
    metadump, stats cachedump and shutdown in every form are memcached's;
    "shutdown graceful" closes the connection and both servers exit 0, and
    larderd (with -e) saved its snapshot; a plain "shutdown" stops larderd
    without saving one;
  - -d -P with relative paths: the daemon serves, its pid file (made
    absolute before the daemon moves to "/") names it, SIGTERM stops it and
    removes the pid file, and the snapshot lands where -e said;
  - -u nobody (when run as root) serves as nobody; -a sets the UNIX socket's
    mode; with -s, -p and -U, stats settings' tcpport and udpport are 0
    (neither is served; memcached shows the ports given); memcached's tuning options (-f -n -L -R -D -W -N -o -U 0 -b -r) are
    accepted and the server serves;
  - what larderd cannot do (-M -C -S -Y -Z), an unknown user and a negative
    -m (memcached wraps it to an enormous limit; larderd said "cannot open
    the cache: invalid argument") are refused at start-up with a message
    naming it, exit status 64 or 71;
  - --shards (larderd's own): 4 serves every item, a value that is not a
    power of two from 1 to 64 is refused with a message;
  - a -p outside 0..65535 or not a number is refused (memcached: "Invalid
    port number"), never served on another port; -p 0 (TCP off) without
    -s is refused (nothing to listen on);
  - -l as memcached reads it: a list separated by commas (or semicolons),
    several -l joined into one, an entry with its own port (host:port,
    [v6]:port); the server listens on every address, and stats settings'
    "inter" is memcached's;
  - -I over half of -m is refused, as memcached refuses it; -I over an
    eighth of -m (the engine's limit on one entry) starts with a warning
    that names the values it will refuse, and such a value is refused
    with "SERVER_ERROR object too large for cache" (binary: "Too large."
    for SET, ADD and REPLACE), its key's old value removed, the server
    serving on;
  - -b 0, -1, -77 and a word accepted and served, as memcached accepts
    them (its atoi), stats settings' tcp_backlog memcached's (larderd
    refused 0 and negatives);
  - stats settings with -A -F -X -a -b -B -D: the fields for those options
    that both servers have read as memcached's.
"""
import os
import pwd
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time

from loopback import free_ports, recv_until, run_driver, serve, wait_listening

# stats settings fields for options both servers keep (check_flags' options).
SAME_SETTINGS = [b"umask", b"shutdown_command", b"stat_key_prefix", b"tcp_backlog", b"binding_protocol",
                 b"auth_enabled_sasl", b"auth_enabled_ascii", b"flush_enabled",
                 b"dump_enabled", b"detail_enabled", b"idle_timeout", b"track_sizes",
                 b"ssl_enabled"]
SAME_REPLIES = [b"flush_all\r\n", b"flush_all noreply\r\n", b"flush_all abc\r\n",
                b"flush_all 10\r\n", b"lru_crawler metadump all\r\n",
                b"lru_crawler metadump 1\r\n", b"stats cachedump 1 1\r\n",
                b"shutdown foo\r\n", b"shutdown noreply\r\n", b"shutdown graceful now\r\n"]


def talk(port, data, path=None):
    """Sends data then mn; returns the replies before MN."""
    if path:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
    else:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(data + b"mn\r\n")
    out = recv_until(s, b"MN\r\n", "the replies to %r" % data)
    s.close()
    return out[:-len(b"MN\r\n")]


def closes(port, data):
    """Sends data; true when the server closes the connection without a reply."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(data)
    out = s.recv(100)
    s.close()
    return out == b""


def wait_exit(p, what):
    try:
        return p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        raise RuntimeError("%s did not exit" % what)


def check_flags(larderd, memcached, tmp):
    snap = os.path.join(tmp, "graceful.snap")
    flags = ["-A", "-F", "-X", "-a", "755", "-b", "77", "-B", "ascii", "-D", "#"]
    lar, lp = serve([larderd, "-l", "127.0.0.1", "-e", snap] + flags)
    try:
        mc, mp = serve([memcached, "-l", "127.0.0.1", "-U", "0", "-u", "root"] + flags)
    except Exception:
        lar.kill()
        lar.wait()
        raise
    try:
        for port in (lp, mp):
            talk(port, b"set k 0 0 1\r\nx\r\n")
        for cmd in SAME_REPLIES:
            a, b = talk(lp, cmd), talk(mp, cmd)
            if a != b:
                raise RuntimeError("%r: larderd %r, memcached %r" % (cmd, a, b))
        if talk(lp, b"get k\r\n") != b"VALUE k 0 1\r\nx\r\nEND\r\n":
            raise RuntimeError("-F: the item did not survive the refused flush_all")
        print("-A -F -X: %d commands answered as memcached answers them" % len(SAME_REPLIES))
        got = []
        for port in (lp, mp):
            lines = talk(port, b"stats settings\r\n").split(b"\r\n")
            got.append([l for l in lines if l.split(b" ")[1:2] in ([n] for n in SAME_SETTINGS)])
        if got[0] != got[1] or len(got[1]) != len(SAME_SETTINGS):
            raise RuntimeError("stats settings: larderd %r, memcached %r" % tuple(got))
        names = []
        for port in (lp, mp):
            lines = talk(port, b"stats settings\r\n").split(b"\r\n")
            names.append([l.split(b" ")[1] for l in lines if l.startswith(b"STAT ")])
        if [n for n in names[0] if n in names[1]] != [n for n in names[1] if n in names[0]]:
            raise RuntimeError("stats settings: not in memcached's order: %r" % names[0])
        if [n for n in names[0] if n not in names[1]]:
            raise RuntimeError("stats settings: names memcached lacks: %r" % names[0])
        memory_file = b"STAT memory_file " + os.path.abspath(snap).encode()
        if memory_file not in talk(lp, b"stats settings\r\n").split(b"\r\n"):
            raise RuntimeError("stats settings: no %r" % memory_file)
        print("stats settings: %s as memcached's; every name in its order; memory_file the -e file"
              % b" ".join(got[0]).decode())
        for port, p, name in ((lp, lar, "larderd"), (mp, mc, "memcached")):
            if not closes(port, b"shutdown graceful\r\n"):
                raise RuntimeError("%s: shutdown graceful did not close the connection" % name)
            rc = wait_exit(p, name)
            if rc != 0:
                raise RuntimeError("%s exited with %d after shutdown graceful" % (name, rc))
        if not os.path.exists(snap):
            raise RuntimeError("shutdown graceful saved no snapshot")
        print("shutdown graceful: both exit 0; larderd saved its snapshot")
    finally:
        for p in (lar, mc):
            if p.poll() is None:
                p.kill()
                p.wait()

    plain = os.path.join(tmp, "plain.snap")
    lar, lp = serve([larderd, "-l", "127.0.0.1", "-A", "-e", plain])
    talk(lp, b"set k 0 0 1\r\nx\r\n")
    if not closes(lp, b"shutdown\r\n") or wait_exit(lar, "larderd") != 0:
        raise RuntimeError("shutdown did not stop larderd cleanly")
    if os.path.exists(plain):
        raise RuntimeError("a plain shutdown saved a snapshot (it stops as SIGINT does)")
    print("shutdown: larderd exits 0 without saving, as on SIGINT")


def check_daemon(larderd, tmp):
    r, lp = serve([larderd, "-d", "-P", "larderd.pid", "-e", "daemon.snap",
                   "-l", "127.0.0.1", "-o", "modern,hashpower=20", "-f", "1.25", "-n", "48",
                   "-L", "-R", "20", "-D", ":", "-W", "-N", "1", "-U", "0", "-b", "512",
                   "-r"], cwd=tmp)
    if wait_exit(r, "larderd -d's parent") != 0:
        raise RuntimeError("larderd -d exited with %d" % r.returncode)
    pidfile = os.path.join(tmp, "larderd.pid")
    deadline = time.time() + 60
    while not os.path.exists(pidfile) or not open(pidfile).read().endswith("\n"):
        if time.time() > deadline:
            raise RuntimeError("no pid file from -P")
        time.sleep(0.05)
    pid = int(open(pidfile).read())
    talk(lp, b"set k 0 0 1\r\nx\r\n")
    if talk(lp, b"get k\r\n") != b"VALUE k 0 1\r\nx\r\nEND\r\n":
        raise RuntimeError("the daemon does not serve")
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 60
    while os.path.exists(pidfile) or os.path.exists("/proc/%d" % pid):
        if time.time() > deadline:
            raise RuntimeError("the daemon did not stop and remove its pid file")
        time.sleep(0.05)
    if not os.path.exists(os.path.join(tmp, "daemon.snap")):
        raise RuntimeError("the daemon saved no snapshot where -e said")
    print("-d -P -e with relative paths, and the tuning options: served, stopped, pid file "
          "removed, snapshot saved")


def check_user_and_mask(larderd, tmp):
    path = os.path.join(tmp, "sock")
    args = [larderd, "-s", path, "-a", "0750", "-p", "11299", "-U", "11299"]
    as_root = os.geteuid() == 0
    if as_root:
        args += ["-u", "nobody"]
    p = subprocess.Popen(args)
    try:
        deadline = time.time() + 60
        while not os.path.exists(path):
            if time.time() > deadline or p.poll() is not None:
                raise RuntimeError("no UNIX socket")
            time.sleep(0.05)
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode != 0o750:
            raise RuntimeError("-a 0750: the socket's mode is %o" % mode)
        # The path exists from bind(); connections are refused until listen().
        while True:
            try:
                version = talk(0, b"version\r\n", path=path)
                break
            except ConnectionRefusedError:
                if time.time() > deadline or p.poll() is not None:
                    raise
                time.sleep(0.05)
        if version[:8] != b"VERSION ":
            raise RuntimeError("no version over the UNIX socket")
        # docs/server.md: tcpport and udpport say what is served (memcached
        # shows the -p and -U given: 11299 here, where it serves neither).
        ports = [l for l in talk(0, b"stats settings\r\n", path=path).split(b"\r\n")
                 if l.startswith((b"STAT tcpport ", b"STAT udpport "))]
        if ports != [b"STAT tcpport 0", b"STAT udpport 0"]:
            raise RuntimeError("-s with -p and -U: %r" % ports)
        if as_root:
            uid = [l for l in open("/proc/%d/status" % p.pid) if l.startswith("Uid:")][0]
            if int(uid.split()[1]) != pwd.getpwnam("nobody").pw_uid:
                raise RuntimeError("-u nobody: %s" % uid.strip())
        print("-a 0750: the socket's mode; tcpport and udpport 0 with -s -p -U; %s" % ("-u nobody: serving as nobody" if as_root
                                                  else "-u not checked (not root)"))
    finally:
        p.terminate()
        wait_exit(p, "larderd -s")


def check_refusals(larderd):
    for args, word in ((["-M"], b"evictions"), (["-C"], b"CAS"), (["-S"], b"SASL"),
                       (["-Y", "/dev/null"], b"auth"), (["-Z"], b"TLS"),
                       (["-u", "no-such-user-here"], b"no-such-user-here"),
                       (["-m", "-5"], b"bad -m value"), (["-m", "99999999999999999"], b"bad -m value")):
        if args[0] == "-u" and os.geteuid() != 0:
            continue
        r = subprocess.run([larderd, "-p", "-1", "-l", "127.0.0.1"] + args,
                           capture_output=True, timeout=60)
        if r.returncode not in (64, 71) or word not in r.stderr:
            raise RuntimeError("%r: exit %d, %r" % (args, r.returncode, r.stderr))
    print("-M -C -S -Y -Z, an unknown user and a negative or overflowing -m: refused with a message")


def check_port(larderd):
    """-p takes a port number, 0-65535, as memcached does ("Invalid port
    number"): a larger one is refused, never served on another port (as
    the resolver would wrap 99999 to 34463), and a name is not looked up
    as a service. -p 0, memcached's "TCP off", without -s (memcached then
    listens nowhere; larderd listened on a port of the kernel's choosing)
    is refused with a message."""
    for bad in ("65536", "99999", "-2", "http", "11211x", "", "0"):
        r = subprocess.run([larderd, "-p", bad, "-l", "127.0.0.1"], capture_output=True,
                           timeout=60)
        if r.returncode != 64 or b"-p" not in r.stderr:
            raise RuntimeError("-p %r: exit %d, %r" % (bad, r.returncode, r.stderr))
    print("-p: 65536, 99999, -2, http, 11211x, an empty value and 0 without -s refused with a message")


def check_ephemeral_port(larderd, memcached, tmp):
    """-p -1 and memcached's ports file (MEMCACHED_PORT_FILENAME): a port the
    kernel picks, one per listening socket, in memcached's lines ("TCP INET:
    <port>"), stats settings' tcpport -1 as memcached's, -v's start-up line
    naming the port picked; a file that cannot be written stops the server
    with a message (larderd refused -p -1)."""
    got = []
    for server in (larderd, memcached):
        p, port = serve([server, "-l", "127.0.0.1", "-U", "0", "-u", "root"])
        try:
            got.append([l for l in talk(port, b"stats settings\r\n").split(b"\r\n")
                        if l.startswith(b"STAT tcpport ")])
        finally:
            p.terminate()
            wait_exit(p, server)
    if got[0] != got[1] or got[0] != [b"STAT tcpport -1"]:
        raise RuntimeError("-p -1: tcpport: larderd %r, memcached %r" % tuple(got))
    # -v's start-up line names the port the kernel picked (it said "-1"); it
    # comes before the signal wait, so SIGTERM cannot cut it off.
    p, port = serve([larderd, "-v", "-l", "127.0.0.1", "-U", "0", "-u", "root"],
                    stderr=subprocess.PIPE)
    p.terminate()
    err = p.communicate(timeout=60)[1]
    if ("serving on 127.0.0.1:%d " % port).encode() not in err:
        raise RuntimeError("-v -p -1: the start-up line does not name port %d: %r" % (port, err))
    # Every address (-l left out): an IPv4 and an IPv6 socket, each its own port.
    path = os.path.join(tmp, "ports")
    p = subprocess.Popen([larderd, "-p", "-1"], env=dict(os.environ, MEMCACHED_PORT_FILENAME=path))
    try:
        deadline = time.time() + 60
        while not os.path.exists(path):
            if time.time() > deadline or p.poll() is not None:
                raise RuntimeError("-p -1 without -l: no ports file")
            time.sleep(0.05)
        lines = open(path).read().splitlines()
        kinds = sorted(l.split(": ")[0] for l in lines)
        if kinds not in (["TCP INET"], ["TCP INET", "TCP INET6"]):
            raise RuntimeError("-p -1 without -l: ports file %r" % lines)
        for l in lines:
            host = "::1" if l.startswith("TCP INET6") else "127.0.0.1"
            s = socket.create_connection((host, int(l.split(": ")[1])), timeout=30)
            s.sendall(b"version\r\n")
            recv_until(s, b"\r\n", "the version reply on %s" % l)
            s.close()
    finally:
        p.terminate()
        wait_exit(p, "larderd -p -1")
    r = subprocess.run([larderd, "-p", "-1", "-l", "127.0.0.1"], capture_output=True, timeout=60,
                       env=dict(os.environ, MEMCACHED_PORT_FILENAME=os.path.join(tmp, "no", "x")))
    if r.returncode != 71 or b"MEMCACHED_PORT_FILENAME" not in r.stderr:
        raise RuntimeError("an unwritable ports file: exit %d, %r" % (r.returncode, r.stderr))
    print("-p -1: ports file %s; tcpport -1 as memcached's; -v names the port; an unwritable"
          " file refused"
          % " and ".join(kinds))


def bin_frame(op, key=b"", ext=b"", value=b""):
    body = ext + key + value
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(ext), 0, 0, len(body), 0, 0) + body


def check_listen_list(larderd, memcached):
    """-l lists, a second -l and a host:port entry. The ports are picked
    (free_ports), since an entry's own port must be a number: a server that
    finds one taken meanwhile exits, and is started again on new ones."""
    inter = []
    for server in (larderd, memcached):
        for _ in range(5):
            port, port2 = free_ports(2)
            args = ["-p", str(port), "-l", "127.0.0.1,127.0.0.2;127.0.0.3", "-l", "127.0.0.4",
                    "-l", "127.0.0.5:%d" % port2]
            addrs = [("127.0.0.%d" % i, port) for i in range(1, 5)] + [("127.0.0.5", port2)]
            p = subprocess.Popen([server, "-U", "0", "-u", "root"] + args)
            try:
                if not wait_listening(p.pid, {port, port2}):
                    continue
                for a in addrs:
                    s = socket.create_connection(a, timeout=30)
                    s.sendall(b"version\r\nstats settings\r\n")
                    got = recv_until(s, b"END\r\n", "stats settings from %s:%d" % a)
                    s.close()
                    if not got.startswith(b"VERSION "):
                        raise RuntimeError("%s -l: %s:%d answered %r" % ((server,) + a + (got[:40],)))
                inter.append([l.replace(b":%d" % port2, b":<port2>") for l in got.split(b"\r\n")
                              if l.startswith(b"STAT inter ")])
                break
            finally:
                p.terminate()
                wait_exit(p, server)
        else:
            raise RuntimeError("%s -l: the picked ports were taken five times" % server)
    if inter[0] != inter[1]:
        raise RuntimeError("-l: stats settings inter: larderd %r, memcached %r" % tuple(inter))
    print("-l lists, several -l, host:port: every address served; %s as memcached's"
          % inter[0][0].decode())


def check_item_vs_memory(larderd, memcached):
    for server in (memcached, larderd):
        r = subprocess.run([server, "-p", "-1", "-l", "127.0.0.1", "-U", "0", "-u", "root",
                            "-m", "8", "-I", "5m"], capture_output=True, timeout=60)
        if r.returncode != 64 or b"1/2 of memory" not in r.stderr:
            raise RuntimeError("%s -m 8 -I 5m: exit %d, %r" % (server, r.returncode, r.stderr))
    p, lp = serve([larderd, "-l", "127.0.0.1", "-m", "8", "-I", "4m"], stderr=subprocess.PIPE)
    try:
        big = 1536 * 1024
        out = talk(lp, b"set k 0 0 1\r\nx\r\nset k 0 0 %d\r\n%s\r\nget k\r\n"
                   b"set k 0 0 1000000\r\n%s\r\nmg k s\r\n"
                   % (big, b"v" * big, b"w" * 1000000))
        if out != b"STORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\n" \
                  b"STORED\r\nHD s1000000\r\n":
            raise RuntimeError("-m 8 -I 4m: %r" % out[:200])
        # The binary protocol names the same refusal "Too large." (status 3),
        # whatever the opcode, as memcached names a value over -I.
        s = socket.create_connection(("127.0.0.1", lp), timeout=30)
        for op in (0x01, 0x02, 0x03):  # SET ADD REPLACE
            s.sendall(bin_frame(op, b"n", struct.pack(">II", 0, 0), b"v" * big) +
                      bin_frame(0x0a))  # NOOP
            got = recv_until(s, b"\x81\x0a" + bytes(22), "the replies to opcode %#x" % op)
            status = struct.unpack_from(">H", got, 6)[0]
            if got[1] != op or status != 3 or b"Too large." not in got:
                raise RuntimeError("-m 8 -I 4m: binary opcode %#x: %r" % (op, got[:60]))
        s.close()
    finally:
        p.terminate()
        wait_exit(p, "larderd -m 8 -I 4m")
    err = p.stderr.read()
    if b"1/8" not in err or b"-I" not in err:
        raise RuntimeError("-m 8 -I 4m: no warning about the entry limit: %r" % err)
    print("-m 8 -I 5m refused as by memcached; -m 8 -I 4m warns and refuses a 1.5 MiB value")


def check_counts(larderd, memcached):
    """-m, -t and -c refused as memcached refuses them: each read as atoi
    reads it (a trailing letter ignored, no number is 0), a count under 1
    refused with memcached's words and exit status (-t, -c: 1; -m 0 fails
    memcached's -I check: 64), and -t over 64 warned about in its words;
    -I under 1 KiB or over 1 GiB, -f -n -R -D values memcached refuses (no
    effect in larderd, which took them all) and a bad -B refused with
    memcached's words and exit status."""
    cases = (["-t", "0"], ["-t", "-1"], ["-t", "abc"], ["-t", ""], ["-c", "0"], ["-c", "-5"],
             ["-c", "abc"], ["-c", ""], ["-m", "0"], ["-m", "abc"], ["-m", ""], ["-m", "0x10"],
             ["-t", "65", "-m", "0"], ["-m", "1k"], ["-c", "0", "-t", "0"],
             # -I under memcached's 1 KiB (as its atoi reads it) or over 1 GiB; memcached's
             # tuning options with values it refuses; -B not a protocol (larderd had its own words,
             # or took them)
             ["-I", "1000"], ["-I", "abc"], ["-I", "0"], ["-I", "-5"], ["-I", "1g"], ["-I", ""],
             ["-I", "1025m", "-m", "4000"], ["-f", "0.5"], ["-f", "1.0"], ["-f", "abc"],
             ["-n", "0"], ["-n", "abc"], ["-R", "0"], ["-R", "abc"], ["-D", ""],
             ["-B", "foo"], ["-B", ""], ["-f", "0", "-n", "0"])
    for args in cases:
        got = []
        for server in (memcached, larderd):
            r = subprocess.run([server, "-p", "-1", "-l", "127.0.0.1", "-U", "0", "-u", "root"]
                               + args, capture_output=True, timeout=60)
            got.append((r.returncode, r.stderr))
        if got[0] != got[1]:
            raise RuntimeError("%r: memcached exit %d %r, larderd exit %d %r"
                               % ((args,) + got[0] + got[1]))
    print("-m -t -c -I -f -n -R -D -B: %d bad values refused with memcached's words and exit status"
          % len(cases))


def check_backlog(larderd, memcached):
    """-b as memcached 1.6.18 reads it (atoi, handed to listen(2), which
    takes 0 and caps a negative at somaxconn): 0, -1 and a word start both
    servers, which serve, and stats settings' tcp_backlog is memcached's.
    larderd refused 0 and every negative."""
    for value in ("0", "-1", "-77", "abc"):
        got = []
        for server in (larderd, memcached):
            p, port = serve([server, "-l", "127.0.0.1", "-U", "0", "-u", "root", "-b", value],
                            stderr=subprocess.PIPE)
            try:
                if talk(port, b"set k 0 0 1\r\nx\r\nget k\r\n") != b"STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n":
                    raise RuntimeError("-b %s: %s did not serve" % (value, server))
                got.append([l for l in talk(port, b"stats settings\r\n").split(b"\r\n")
                            if l.startswith(b"STAT tcp_backlog ")])
            except RuntimeError:
                p.kill()
                raise RuntimeError("-b %s: %s: %r" % (value, server, p.communicate()[1]))
            p.terminate()
            wait_exit(p, server)
        if got[0] != got[1]:
            raise RuntimeError("-b %s: larderd %r, memcached %r" % (value, got[0], got[1]))
    print("-b 0, -1, -77, abc: accepted, served, tcp_backlog as memcached's")


def check_suboptions(larderd, memcached):
    """-o: a suboption memcached 1.6.18 does not know (or an empty one) is
    refused as memcached refuses it, "Illegal suboption" and exit 1, where
    larderd accepted anything; a value memcached refuses (hashpower=abc, a
    missing one, out of range, not a number, hot_lru_pct and warm_lru_pct
    over 80 together, across -o options) is refused with memcached's words
    and exit status, where larderd accepted every value; the known ones with
    values memcached takes start both servers; the two whose behaviour
    larderd does not have (closing idle connections, extstore) are refused
    with a message, never ignored (SUBOPT-V1, SUBOPT-V2)."""
    refused = ["bogus", "bogus=3", "hashpower=20,bogus,modern", ",modern", "modern,,",
               "meta_response_old", "lru_segmented", "ext_path_x=1"]
    refused += ["hashpower", "hashpower=", "hashpower=abc", "hashpower=-1", "hashpower=11",
                "hashpower=33", "hashpower=99999999", "modern,hashpower=abc", "tail_repair_time",
                "tail_repair_time=9", "tail_repair_time=abc", "hash_algorithm",
                "hash_algorithm=md5", "lru_crawler_sleep", "lru_crawler_sleep=-1",
                "lru_crawler_sleep=1000001", "lru_crawler_tocrawl", "lru_crawler_tocrawl=5x",
                "lru_crawler_tocrawl=-1", "hot_lru_pct", "hot_lru_pct=0", "hot_lru_pct=80",
                "warm_lru_pct=abc", "hot_lru_pct=79", "hot_lru_pct=40,warm_lru_pct=41",
                "-o hot_lru_pct=50 -o warm_lru_pct=31", "hot_max_factor", "hot_max_factor=0",
                "warm_max_factor=abc", "slab_automove=3", "slab_automove=-1",
                "slab_automove_ratio=0", "slab_automove_ratio=1.5", "slab_automove_ratio=abc",
                "slab_automove_window=2", "slab_automove_window=abc",
                "slab_automove_freeratio=5x", "slab_automove_freeratio", "watcher_logbuf_size=-1",
                "worker_logbuf_size=abc", "read_buf_mem_limit=5x", "temporary_ttl", "idle_timeout",
                "ssl_ciphers", "ext_page_size", "ext_path"]
    for sub in refused:
        got = []
        opts = sub.split() if sub.startswith("-o ") else ["-o", sub]
        for server in (memcached, larderd):
            r = subprocess.run([server, "-p", "-1", "-l", "127.0.0.1", "-U", "0", "-u", "root"]
                               + opts, capture_output=True, timeout=60)
            got.append((r.returncode, r.stderr))
        if got[0] != got[1]:
            raise RuntimeError("-o %r: memcached exit %d %r, larderd exit %d %r"
                               % ((sub,) + got[0] + got[1]))
    accepted = ("modern,no_modern,hashpower=20x,slab_chunk_max=512,track_sizes,idle_timeout=0,"
                "ssl_ciphers=x,tail_repair_time=10,hash_algorithm=xxh3,lru_crawler_sleep=1000000,"
                "lru_crawler_tocrawl=0,hot_lru_pct=1,warm_lru_pct=79,hot_max_factor=5x,"
                "slab_automove,slab_automove=2,slab_automove_ratio=1,slab_automove_window=3,"
                "slab_automove_freeratio=-1,watcher_logbuf_size=0,read_buf_mem_limit=0,"
                "idle_timeout=abc,")
    for server in (memcached, larderd):
        p, port = serve([server, "-l", "127.0.0.1", "-U", "0", "-u", "nobody", "-o", accepted],
                        stderr=subprocess.DEVNULL)
        try:
            talk(port, b"version\r\n")
        finally:
            p.kill()
            p.wait()
    for sub, word in (("idle_timeout=60", b"idle"), ("ext_path=/tmp/x:64m", b"extstore")):
        r = subprocess.run([larderd, "-p", "-1", "-l", "127.0.0.1", "-o", sub],
                           capture_output=True, timeout=60)
        if r.returncode != 64 or word not in r.stderr:
            raise RuntimeError("-o %s: exit %d, %r" % (sub, r.returncode, r.stderr))
    print("-o: %d unknown suboptions and bad values refused as memcached refuses them; the known "
          "ones accepted; idle_timeout and ext_path refused with a message" % len(refused))


def check_shards(larderd):
    """--shards K: a power of two up to 64 serves every item; anything else is
    refused at start-up with a message."""
    for bad in ("0", "3", "128", "-4", "4k", "x"):
        r = subprocess.run([larderd, "-p", "-1", "-l", "127.0.0.1", "--shards=" + bad],
                           capture_output=True, timeout=60)
        if r.returncode == 0 or b"--shards" not in r.stderr:
            raise RuntimeError("--shards=%s: exit %d, %r" % (bad, r.returncode, r.stderr))
    threads = {}
    for shards in ("1", "4"):
        p, lp = serve([larderd, "-l", "127.0.0.1", "--shards=" + shards])
        try:
            sets = b"".join(b"set k%d 0 0 2\r\nv%d\r\n" % (i, i % 10) for i in range(400))
            if talk(lp, sets) != b"STORED\r\n" * 400:
                raise RuntimeError("--shards=%s: a set was not stored" % shards)
            gets = talk(lp, b"get " + b" ".join(b"k%d" % i for i in range(400)) + b"\r\n")
            want = b"".join(b"VALUE k%d 0 2\r\nv%d\r\n" % (i, i % 10) for i in range(400))
            if gets != want + b"END\r\n":
                raise RuntimeError("--shards=%s: the items did not read back" % shards)
            threads[shards] = len(os.listdir("/proc/%d/task" % p.pid))
        finally:
            p.terminate()
            wait_exit(p, "larderd --shards=" + shards)
    # one maintainer thread per shard, the rest the same
    if threads["4"] - threads["1"] != 3:
        raise RuntimeError("--shards=4: %d threads against %d with one shard"
                           % (threads["4"], threads["1"]))
    print("--shards: 1 and 4 serve every item (4: three more maintainer threads);"
          " 0, 3, 128, -4, 4k and x refused with a message")


def main():
    larderd, memcached = os.path.abspath(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o777)  # -u nobody
        check_flags(larderd, memcached, tmp)
        check_daemon(larderd, tmp)
        check_user_and_mask(larderd, tmp)
        check_refusals(larderd)
        check_port(larderd)
        check_ephemeral_port(larderd, memcached, tmp)
        check_item_vs_memory(larderd, memcached)
        check_counts(larderd, memcached)
        check_backlog(larderd, memcached)
        check_listen_list(larderd, memcached)
        check_shards(larderd)
        check_suboptions(larderd, memcached)
    print("PASS")


if __name__ == "__main__":
    run_driver(main)
