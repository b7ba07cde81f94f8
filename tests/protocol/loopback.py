"""tests/protocol/loopback.py - helpers the protocol test drivers share: a free
loopback port, waiting (with a deadline) until a server listens on one, and
running a driver's main so that a failure is one line in ctest's log."""
import socket
import sys
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


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


def run_driver(main):
    """Runs main(); an exception becomes one "FAIL: ..." line and exit status 1."""
    try:
        main()
    except Exception as e:
        print("FAIL: %s" % e)
        sys.exit(1)
