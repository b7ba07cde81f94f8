"""tests/protocol/loopback.py - helpers the protocol test drivers share:
starting a server on a loopback port the kernel picks, free loopback ports
for a program that cannot take such a port and waiting (with a deadline)
until it listens on them, reading a reply to its end, and running a driver's main
so that a failure is one line in ctest's log. The text-protocol client (a
connection, one-shot requests, stats) is larderd_client.py."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PORTS_FILE_ENV = "MEMCACHED_PORT_FILENAME"


def serve(argv, timeout=60.0, **popen):
    """Starts a server (larderd or memcached: argv, which must not name a
    port) with "-p -1", a port the kernel picks, and waits for the ports
    file that both write when memcached's variable names one (docs/server.md,
    "Build and run"). Returns (process, port): the port of its first IPv4
    socket, listening already, never one another program could have taken
    between a pick and a bind. Raises if the server exits first. popen goes
    to subprocess.Popen (an env given there is kept, the variable added)."""
    d = tempfile.mkdtemp(prefix="larderd-ports.")
    try:
        os.chmod(d, 0o777)  # memcached -u nobody writes the file as nobody
        path = os.path.join(d, "ports")
        popen["env"] = dict(popen.get("env") or os.environ, **{PORTS_FILE_ENV: path})
        proc = subprocess.Popen(list(argv) + ["-p", "-1"], **popen)
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            # A daemon's parent (-d) exits once the file is written.
            if proc.poll() is not None and not os.path.exists(path):
                raise RuntimeError("%s exited with status %d before listening"
                                   % (os.path.basename(argv[0]), proc.returncode))
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise RuntimeError("%s did not start" % os.path.basename(argv[0]))
            time.sleep(0.01)  # a poll interval
        with open(path) as f:
            for line in f:
                kind, _, port = line.partition(": ")
                if kind == "TCP INET":
                    return proc, int(port)
        proc.kill()
        proc.wait()
        raise RuntimeError("%s listens on no IPv4 port" % os.path.basename(argv[0]))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def free_ports(n):
    """n distinct free loopback ports, for a program that cannot bind a port
    the kernel picks and report it (nutcracker). The kernel picks each; all
    n sockets stay bound until every port is known, so that it cannot hand
    out the same port twice. A port is free only until the caller's program
    binds it: another program could take it meanwhile, so the caller checks
    that its program got it (listening_ports) and retries if not."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def listening_ports(pid):
    """The TCP ports process pid listens on (IPv4 and IPv6), from the
    kernel's socket tables and the process's descriptors."""
    try:
        inodes = {os.readlink("/proc/%d/fd/%s" % (pid, fd))
                  for fd in os.listdir("/proc/%d/fd" % pid)}
    except OSError:
        return set()
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for row in f:
                fields = row.split()
                # fields: sl, local address:port (hex), remote, state (0A: LISTEN), ..., inode
                if fields[3] == "0A" and "socket:[%s]" % fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def wait_listening(pid, ports, timeout=60.0):
    """Waits until process pid listens on every port of ports: True, or
    False once it has exited (or is a zombie) without, as a program does
    when another took a picked port first (free_ports)."""
    deadline = time.monotonic() + timeout
    while not set(ports) <= listening_ports(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
        except OSError:
            return False
        if time.monotonic() > deadline:
            raise RuntimeError("process %d does not listen on %s" % (pid, sorted(ports)))
        time.sleep(0.02)  # a poll interval
    return True


def recv_until(s, end, what):
    """Reads from socket s until what it read ends with end; raises, naming
    what it waited for, when the peer closes first."""
    out = b""
    while not out.endswith(end):
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed before %s" % what)
        out += chunk
    return out


def rss_kib(pid):
    """A process's resident set in KiB (0 once it is gone)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def run_driver(main):
    """Runs main(); an exception becomes one "FAIL: ..." line and exit status 1."""
    try:
        main()
    except Exception as e:
        print("FAIL: %s" % e)
        sys.exit(1)
