#!/usr/bin/env python3
"""Hostile HTTP clients of psb's Prometheus endpoint, and what psb tells them.

  prom_slow.py trickle PORT N SECONDS [INTERVAL]
      keep N connections, each sending its request one byte per INTERVAL (0.25 s), opening
      a new one whenever psb closes one; prints {"opened", "closed"}
  prom_slow.py silent PORT N SECONDS
      keep N connections that send nothing, likewise
  prom_slow.py told PORT SECONDS STATUS TEXT
      open one connection, send nothing: psb must answer STATUS with TEXT in the body
      within SECONDS and close it
  prom_slow.py evict PORT N
      open N + 1 silent connections one after the other: the first must be answered 503
      (its slot went to the last) and closed
Exit status 0 when the check holds; AssertionError otherwise.
"""
import json
import socket
import sys
import time

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow\r\n\r\n"


def opened(port):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=2)
    s.setblocking(False)
    return s


def gone(s):
    """True when psb closed s (whatever it said first is read and dropped)."""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def keep(port, n, seconds, interval, send):
    n, seconds, interval = int(n), float(seconds), float(interval)
    conns, stats = [], {"opened": 0, "closed": 0}
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        while len(conns) < n:
            try:
                conns.append([opened(port), 0])
                stats["opened"] += 1
            except OSError:
                break
        for c in list(conns):
            if gone(c[0]):
                stats["closed"] += 1
                c[0].close()
                conns.remove(c)
            elif send:
                try:
                    c[0].send(REQUEST[c[1] % len(REQUEST):c[1] % len(REQUEST) + 1])
                    c[1] += 1
                except OSError:
                    pass
        time.sleep(interval)
    for c in conns:
        c[0].close()
    print(json.dumps(stats))


def read_all(s, seconds):
    s.setblocking(True)
    s.settimeout(seconds)
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            return buf
        buf += d


def told(port, seconds, status, text):
    s = opened(port)
    t0 = time.monotonic()
    reply = read_all(s, float(seconds)).decode(errors="replace")
    took = time.monotonic() - t0
    assert reply.startswith("HTTP/1.1 %s" % status), reply[:300]
    assert text in reply, reply[:300]
    print("told %r after %.2f s" % (reply.splitlines()[0], took))


def evict(port, n):
    first = opened(port)
    rest = []
    for _ in range(int(n)):
        time.sleep(0.05)  # the first is the one waiting longest
        rest.append(opened(port))
    reply = read_all(first, 10).decode(errors="replace")
    assert reply.startswith("HTTP/1.1 503"), reply[:300]
    assert "node.prometheus_connections" in reply, reply[:300]
    for s in rest:
        s.close()


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "trickle":
        keep(args[0], args[1], args[2], args[3] if len(args) > 3 else 0.25, True)
    elif mode == "silent":
        keep(args[0], args[1], args[2], 0.05, False)
    elif mode == "told":
        told(*args)
    elif mode == "evict":
        evict(*args)
    else:
        raise SystemExit("prom_slow.py: unknown mode %s" % mode)


if __name__ == "__main__":
    main()
