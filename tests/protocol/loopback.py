"""tests/protocol/loopback.py - helpers the protocol test drivers share: a free
loopback port, and waiting (with a deadline) until a server listens on one."""
import socket
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
