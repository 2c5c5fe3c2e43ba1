"""psb ECHO client for test_echo.sh: raw frames out of an interface, answers read back.

usage: echo_client.py IFNAME PSB_MAC PSB_IP MY_IP CMD [N]

CMD answered   ECHOs of 0, 4, 37, 100 and 1024 bytes: each answered once, byte for byte
    refused    ECHOs psb must not answer (1028 bytes, one segment of two, from port 0, from
               a group MAC) and one whose seg_len does not match its bytes: none answered
    silent N   N good ECHOs: none answered
    flood N    N good ECHOs back to back: prints how many were answered (each byte for
               byte), and fails on an answer to no request

Exits 1 naming what went wrong. Needs tests/lib on PYTHONPATH, and root (AF_PACKET).
"""
import json
import socket
import sys
import time

import psbframe as pf

MY_PORT = 40000		# a UDP socket holds it: the kernel answers psb's frames with nothing
PACKET_HOST = 0
WAIT = 0.5		# seconds an answer may take at most


def fail(msg):
    print("echo_client: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Client:
    def __init__(self, ifname, psb_mac, psb_ip, my_ip):
        self.psb_mac, self.psb_ip, self.my_ip = psb_mac, psb_ip, my_ip
        # a flood's answers all fit its receive buffer
        self.rx, self.tx, self.udp, self.my_mac = pf.raw_peer(ifname, my_ip, MY_PORT, 16 << 20)

    def send(self, hdr, payload, sport=MY_PORT, smac=None):
        self.tx.send(pf.udp_frame(self.psb_mac, smac or self.my_mac, self.my_ip, self.psb_ip,
                                  sport, pf.UDP_PORT, hdr + payload))

    def answers(self, until):
        """The frames psb sends to this client's port until time `until`."""
        got = []
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return got
            self.rx.settimeout(left)
            try:
                frame, addr = self.rx.recvfrom(65536)
            except socket.timeout:
                return got
            if addr[2] == PACKET_HOST and len(frame) >= 42 and frame[23] == 17 and \
                    frame[34:36] == pf.UDP_PORT.to_bytes(2, "big"):
                got.append(frame)

    def want(self, hdr, payload):
        """The answer to ECHO hdr + payload, byte for byte: its header as ECHO_RESP."""
        resp = hdr[:3] + bytes([pf.ECHO_RESP]) + hdr[4:]
        return pf.udp_frame(self.my_mac, self.psb_mac, self.psb_ip, self.my_ip, pf.UDP_PORT,
                            MY_PORT, resp + payload)


def echo(req, n, flags=0, key=0x5eed):
    """An ECHO of n pattern bytes, one whole segment (its stride a multiple of 4)."""
    payload = bytes((req * 7 + i) & 0xff for i in range(n))
    return pf.hdr(pf.ECHO, flags=flags, sender=3, req=req, rnd=req + 1, key=key, total=n,
                  seg_len=n, seg_size=(n + 3) & ~3, aux=0xa0000000 + req), payload


def answered(c):
    sizes = [0, 4, 37, 100, pf.ECHO_MAX_LEN]
    for i, n in enumerate(sizes):
        hdr, payload = echo(100 + i, n, flags=i & 1, key=0x0123456789abcdef + i)
        c.send(hdr, payload)
        got = c.answers(time.monotonic() + WAIT)
        if len(got) != 1:
            fail("ECHO of %d bytes: %d answers, want 1" % (n, len(got)))
        if got[0] != c.want(hdr, payload):
            fail("ECHO of %d bytes: the answer differs\n  got  %s\n  want %s"
                 % (n, got[0].hex(), c.want(hdr, payload).hex()))
    print("echo_client: %d ECHOs (%s bytes) answered byte for byte"
          % (len(sizes), ", ".join(map(str, sizes))))


def refused(c):
    hdr, payload = echo(200, pf.ECHO_MAX_LEN + 4)
    c.send(hdr, payload)				# longer than psb answers
    hdr = pf.hdr(pf.ECHO, req=201, total=128, seg_len=64, seg_size=64)
    c.send(hdr, bytes(64))				# the first of two segments
    hdr, payload = echo(202, 16)
    c.send(hdr, payload, sport=0)			# from port 0
    hdr, payload = echo(203, 16)
    c.send(hdr, payload, smac="03:00:00:00:00:01")	# from a group MAC
    hdr = pf.hdr(pf.ECHO, req=204, total=16, seg_len=16, seg_size=16)
    c.send(hdr, bytes(12))				# seg_len 16, 12 bytes: bad_segment
    got = c.answers(time.monotonic() + WAIT)
    if got:
        fail("%d answers to ECHOs psb must not answer: %s" % (len(got), got[0].hex()))
    print("echo_client: 5 ECHOs psb must not answer: none answered")


def silent(c, n):
    for i in range(n):
        c.send(*echo(300 + i, 16))
    got = c.answers(time.monotonic() + WAIT)
    if got:
        fail("%d answers from a node without the echo role" % len(got))
    print("echo_client: %d ECHOs: none answered" % n)


def flood(c, n):
    want = {}
    start = time.monotonic()
    for i in range(n):
        hdr, payload = echo(1000 + i, 8)
        want[c.want(hdr, payload)] = False
        c.send(hdr, payload)
    sent_s = time.monotonic() - start
    for frame in c.answers(time.monotonic() + 3 * WAIT):
        if want.get(frame) is not False:
            fail("an answer to no request, or a second one: %s" % frame.hex())
        want[frame] = True
    print(json.dumps({"sent": n, "answered": sum(want.values()), "send_s": sent_s}))


def main():
    if len(sys.argv) < 6:
        fail("usage: echo_client.py IFNAME PSB_MAC PSB_IP MY_IP CMD [N]")
    c = Client(*sys.argv[1:5])
    cmd, arg = sys.argv[5], int(sys.argv[6]) if len(sys.argv) > 6 else 0
    if cmd == "answered":
        answered(c)
    elif cmd == "refused":
        refused(c)
    elif cmd == "silent":
        silent(c, arg)
    elif cmd == "flood":
        flood(c, arg)
    else:
        fail("unknown command '%s'" % cmd)


main()
