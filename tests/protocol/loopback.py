"""tests/protocol/loopback.py - helpers the protocol test drivers share: a free
loopback port, waiting (with a deadline) until a server listens on one,
reading a reply to its end, and running a driver's main so that a failure
is one line in ctest's log. The text-protocol client (a connection, one-shot
requests, stats) is larderd_client.py."""
import socket
import sys
import time


def free_ports(n):
    """n distinct free loopback ports. The kernel picks each; all n sockets
    stay bound until every port is known, so that it cannot hand out the
    same port twice (one picked and closed could be picked again). A port
    is free only until the caller's server binds it: another program could
    take it meanwhile (a small race this does not close)."""
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


def free_port():
    return free_ports(1)[0]


def wait_port(port, timeout=60.0):
    """Polls until something accepts on port; the deadline is generous
    because a loaded machine can start a server slowly."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            return
        except OSError:
            time.sleep(0.05)  # a poll interval
    raise RuntimeError("server on port %d did not start" % port)


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
