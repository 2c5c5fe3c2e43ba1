#!/usr/bin/env python3
"""Control-socket protocol checks psbctl cannot make, and stand-ins for psb.

  too_large SOCK      a request over 64 KiB without a newline: too_large, closed; others served
  half SOCK           clients leaving mid-line harm nothing; a partial line waits for its end
  busy SOCK           the 33rd simultaneous client is told busy; the 32 are still served
  silent SOCK         listen and accept, never answer (for psbctl's timeouts)
  counting SOCK LOG   answer status like psb, logging each connection and request to LOG
  stale SOCK          leave a socket file nobody listens on
Exit status 0 when the check holds; AssertionError otherwise.
"""
import json
import os
import socket
import sys
import time

TIMEOUT = 5.0


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # blocking: with psb's listen backlog full a non-blocking connect fails (EAGAIN), a
    # blocking one waits for psb to accept, as any plain client would
    s.connect(path)
    s.settimeout(TIMEOUT)
    return s


def read_line(s):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        assert chunk, "connection closed before a whole reply line: %r" % buf
        buf += chunk
    assert buf.count(b"\n") == 1, "more than one line: %r" % buf
    return json.loads(buf)


def ask(s, req):
    s.sendall(json.dumps(req).encode() + b"\n")
    return read_line(s)


def expect_eof(s):
    try:
        rest = s.recv(65536)
    except ConnectionResetError:
        rest = b""
    assert rest == b"", "expected the connection closed, got %r" % rest[:200]


def too_large(path):
    other = connect(path)  # connected before, must still be served after
    big = connect(path)
    payload = b"x" * (70 * 1024)  # > 64 KiB, no newline anywhere
    try:
        big.sendall(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass  # psb may close before it has all of it; its reply is still there
    r = read_line(big)
    assert r.get("error", {}).get("code") == "too_large", r
    expect_eof(big)
    big.close()
    r = ask(other, {"cmd": "status", "id": 41})
    assert r.get("ok") is True and r.get("id") == 41, r
    other.close()
    r = ask(connect(path), {"cmd": "status", "id": 42})
    assert r.get("ok") is True and r.get("id") == 42, r


def half(path):
    for _ in range(20):
        s = connect(path)
        s.sendall(b'{"cmd": "sta')
        s.close()
    # a partial line stays pending without holding up anyone else
    slow = connect(path)
    slow.sendall(b'{"cmd": "sta')
    r = ask(connect(path), {"cmd": "status", "id": 7})
    assert r.get("ok") is True and r.get("id") == 7, r
    time.sleep(0.2)
    slow.sendall(b'tus", "id": 8}\n')
    r = read_line(slow)
    assert r.get("ok") is True and r.get("id") == 8, r
    # two requests in one write: two replies, in order
    slow.sendall(b'{"cmd": "status", "id": 9}\n{"cmd": "list", "id": 10}\n')
    buf = b""
    while buf.count(b"\n") < 2:
        chunk = slow.recv(65536)
        assert chunk, buf
        buf += chunk
    ids = [json.loads(line)["id"] for line in buf.splitlines()]
    assert ids == [9, 10], ids
    slow.close()


def busy(path):
    held = []
    for i in range(32):
        s = connect(path)
        r = ask(s, {"cmd": "status", "id": i})
        assert r.get("id") == i, r
        held.append(s)
    extra = connect(path)
    r = read_line(extra)
    assert r.get("error", {}).get("code") == "busy", r
    expect_eof(extra)
    r = ask(held[0], {"cmd": "status", "id": 99})
    assert r.get("ok") is True and r.get("id") == 99, r
    for s in held:
        s.close()
    time.sleep(0.2)  # psb notices the hang-ups on its next poll
    r = ask(connect(path), {"cmd": "status", "id": 100})
    assert r.get("ok") is True, r


def listen(path):
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(16)
    return s


def silent(path):
    s = listen(path)
    held = []
    deadline = time.time() + 120
    s.settimeout(1)
    while time.time() < deadline:
        try:
            held.append(s.accept()[0])
        except socket.timeout:
            pass


def counting(path, log):
    s = listen(path)
    out = open(log, "a", buffering=1)
    deadline = time.time() + 120
    s.settimeout(1)
    while time.time() < deadline:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        out.write("connect\n")
        f = c.makefile("rb")
        for line in f:
            req = json.loads(line)
            out.write("request %s %s\n" % (req.get("cmd"), req.get("id")))
            rep = {"ok": True, "role": "worker", "uptime_s": 1.0, "loaded": False,
                   "experiment": {"id": 0, "name": "", "kind": "", "state": "idle",
                                  "elapsed_s": 0.0}}
            if "id" in req:
                rep["id"] = req["id"]
            c.sendall(json.dumps(rep).encode() + b"\n")
        c.close()


def stale(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    {"too_large": too_large, "half": half, "busy": busy, "silent": silent,
     "counting": counting, "stale": stale}[mode](*args)


if __name__ == "__main__":
    main()
