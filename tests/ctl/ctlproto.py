#!/usr/bin/env python3
"""Control-socket protocol checks psbctl cannot make, and stand-ins for psb.

  too_large SOCK      a request over 64 KiB without a newline: too_large, closed; others served
  half SOCK           clients leaving mid-line harm nothing; a partial line waits for its end
  busy SOCK [N]       the 33rd (N+1st) simultaneous client is told busy; the others are
                      still served
  silent SOCK         listen and accept, never answer (for psbctl's timeouts)
  counting SOCK LOG   answer status like psb, logging each connection and request to LOG
  stale SOCK          leave a socket file nobody listens on
  pipeline SOCK N SECONDS OUT PEER
                      write N status requests without waiting for replies, reading them
                      meanwhile, for SECONDS; OUT gets {"sent", "replies", "in_order",
                      "stall_s"}: the longest time the peer psb (its control socket PEER)
                      received no packet, sampled every 20 ms
  noread SOCK PID SECONDS OUT
                      send counters requests, never read: psb must disconnect this client
                      within SECONDS; OUT gets {"requests", "closed_after_s", "rss_kib"}
                      (psb's VmRSS at the start and at its largest)
  idle SOCK SECONDS   say nothing: psb must close the connection with idle_timeout after
                      about SECONDS (and not much before)
Exit status 0 when the check holds; AssertionError otherwise.
"""
import json
import os
import socket
import sys
import threading
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


def busy(path, n=32):
    held = []
    for i in range(int(n)):
        s = connect(path)
        r = ask(s, {"cmd": "status", "id": i})
        assert r.get("id") == i, r
        held.append(s)
    extra = connect(path)
    r = read_line(extra)
    assert r.get("error", {}).get("code") == "busy", r
    assert "(node.ctl_clients %s)" % n in r["error"]["message"], r
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


def peer_rx(s):
    r = ask(s, {"cmd": "counters", "filter": "roles"})
    return sum(v["rx_pkts"] for v in r["counters"].values())


def pipeline(path, n, seconds, out, peer):
    """All requests written back to back by one thread, replies read by another."""
    n, seconds = int(n), float(seconds)
    s = connect(path)
    s.settimeout(None)
    payload = b"".join(b'{"cmd":"status","id":%d}\n' % i for i in range(n))
    state = {"sent": 0, "replies": 0, "in_order": True}
    done = threading.Event()

    def writer():
        # big writes: the socket stays full however fast psb reads it
        off = 0
        try:
            while off < len(payload) and not done.is_set():
                s.sendall(payload[off:off + (1 << 16)])
                off = min(len(payload), off + (1 << 16))
                state["sent"] = payload.count(b"\n", 0, off)
        except OSError:
            pass

    def reader():
        buf = b""
        try:
            while not done.is_set():
                chunk = s.recv(1 << 20)
                if not chunk:
                    return
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    # the id alone, cheaply: the reader must keep up with psb
                    i = line.rfind(b'"id":')
                    j = i + 5
                    while j < len(line) and line[j:j + 1].isdigit():
                        j += 1
                    if i < 0 or int(line[i + 5:j]) != state["replies"]:
                        state["in_order"] = False
                    state["replies"] += 1
        except OSError:
            pass

    threads = [threading.Thread(target=writer, daemon=True),
               threading.Thread(target=reader, daemon=True)]
    for t in threads:
        t.start()
    # the peer psb sees the data plane of this one from outside: packets keep arriving
    p = connect(peer)
    t0 = last = time.monotonic()
    rx = peer_rx(p)
    stall = 0.0
    while time.monotonic() - t0 < seconds:
        time.sleep(0.02)
        now, r = time.monotonic(), peer_rx(p)
        if r != rx:
            rx, last = r, now
        stall = max(stall, now - last)
    state["stall_s"] = round(stall, 3)
    done.set()
    with open(out, "w") as f:
        json.dump(state, f)
    s.shutdown(socket.SHUT_RDWR)
    s.close()


def rss_kib(pid):
    for line in open("/proc/%s/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %s" % pid)


def noread(path, pid, seconds, out):
    s = connect(path)
    s.setblocking(False)
    req = b'{"cmd":"counters"}\n' * 64
    t0 = time.time()
    rss = [rss_kib(pid)] * 2
    sent = 0
    closed = None
    while time.time() - t0 < float(seconds):
        rss[1] = max(rss[1], rss_kib(pid))
        try:
            sent += s.send(req)
        except BlockingIOError:
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            closed = time.time() - t0
            break
    with open(out, "w") as f:
        json.dump({"requests": sent // len(b'{"cmd":"counters"}\n'), "closed_after_s": closed,
                   "rss_kib": rss}, f)
    assert closed is not None, "not disconnected within %s s" % seconds


def idle(path, seconds):
    s = connect(path)
    s.settimeout(30)  # a loaded machine may be slow; psb that never lets go fails here
    t0 = time.time()
    r = read_line(s)
    took = time.time() - t0
    assert r.get("error", {}).get("code") == "idle_timeout", r
    assert "node.ctl_idle_timeout" in r["error"]["message"], r
    expect_eof(s)
    assert took >= float(seconds) * 0.9, "closed after %.2f s" % took


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    {"too_large": too_large, "half": half, "busy": busy, "silent": silent,
     "counting": counting, "stale": stale, "pipeline": pipeline, "noread": noread,
     "idle": idle}[mode](*args)


if __name__ == "__main__":
    main()
