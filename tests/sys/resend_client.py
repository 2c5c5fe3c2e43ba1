"""A hostile psb peer for test_resend.sh: it stores a value, reads it once, then asks for it
again and again for as long as told, and counts what psb sent it.

usage: resend_client.py IFNAME PSB_MAC PSB_IP MY_IP SENDER SECONDS

It pushes a value of LEN bytes to its own key as worker SENDER (PUSH, request 1) and pulls
it (PULL, request 2), then every TICK seconds sends four messages of a few dozen bytes,
each of which asked psb for the value again before psb bounded resends: the PULL again,
a REPAIR of it without ROUND (the whole answer), a REPAIR naming every segment of the
version it read, and a REPAIR of a request psb never saw (a REPAIR_RESP). It prints as
JSON what it sent and what psb sent back during that flood (frames, bytes as on the wire,
whole answers' worth), and the flood's length from its first message to the last frame
that came. Exits 1 naming what went wrong. Needs tests/lib on PYTHONPATH, and root.
"""
import json
import socket
import sys
import threading
import time

import psbframe as pf

MY_PORT = 40000		# a UDP socket holds it: the kernel answers psb's frames with nothing
PACKET_HOST = 0
LEN = 256 * 1024	# the value, bytes
SEG = 1432		# segments of a 1500-byte MTU
KEY = 0x5eed00000001
EPOCH = 0xbad0001
TICK = 0.004
WAIT = 2.0		# seconds the first answers may take


def fail(msg):
    print("resend_client: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Peer:
    def __init__(self, ifname, psb_mac, psb_ip, my_ip, sender):
        self.psb_mac, self.psb_ip, self.my_ip, self.sender = psb_mac, psb_ip, my_ip, sender
        self.rx, self.tx, self.udp, self.my_mac = pf.raw_peer(ifname, my_ip, MY_PORT, 64 << 20)
        self.sent = self.sent_bytes = 0

    def send(self, mtype, req, payload=b"", total=0, offset=0, seg_size=0):
        h = pf.hdr(mtype, sender=self.sender, req=req, key=KEY, total=total, offset=offset,
                   seg_len=len(payload), seg_size=seg_size, aux=EPOCH)
        frame = pf.udp_frame(self.psb_mac, self.my_mac, self.my_ip, self.psb_ip, MY_PORT,
                             pf.UDP_PORT, h + payload)
        self.tx.send(frame)
        self.sent += 1
        self.sent_bytes += len(frame)

    def frames(self, until):
        """psb's frames to this peer's port until time `until` (or none come for WAIT)."""
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return
            self.rx.settimeout(min(left, WAIT))
            try:
                frame, addr = self.rx.recvfrom(65536)
            except socket.timeout:
                return
            if addr[2] == PACKET_HOST and len(frame) >= pf.FRAME_HLEN and frame[23] == 17 and \
                    frame[36:38] == MY_PORT.to_bytes(2, "big"):
                yield frame, pf.unhdr(frame[pf.FRAME_HLEN - pf.HDR_LEN:])

    def answer(self, req, rtype):
        """The whole answer to request req, or fail."""
        got = set()
        for _, h in self.frames(time.monotonic() + WAIT):
            if h["req"] != req:
                continue
            if h["type"] != rtype:
                fail("request %d: answered with type %#x (status %d)" %
                     (req, h["type"], h["status"]))
            got.add(h["offset"])
            if h["total"] == 0 or sum(min(SEG, h["total"] - o) for o in got) == h["total"]:
                return h
        fail("request %d: no whole answer within %.0f s" % (req, WAIT))


def main():
    if len(sys.argv) != 7:
        fail("usage: resend_client.py IFNAME PSB_MAC PSB_IP MY_IP SENDER SECONDS")
    p = Peer(*sys.argv[1:5], int(sys.argv[5]))
    seconds = float(sys.argv[6])
    value = bytes(LEN)
    for off in range(0, LEN, SEG):
        p.send(pf.PUSH, 1, value[off:off + SEG], total=LEN, offset=off, seg_size=SEG)
    rnd = p.answer(1, pf.PUSH | pf.RESP)["rnd"]
    p.send(pf.PULL, 2)
    p.answer(2, pf.PULL | pf.RESP)
    nseg = (LEN + SEG - 1) // SEG
    asks = [
        (pf.PULL, 2, b""),
        (pf.REPAIR, 2, pf.repair(pf.PULL)),
        (pf.REPAIR, 2, pf.repair(pf.PULL, pf.REPAIR_ROUND, 0, nseg, rnd)),
        (pf.REPAIR, 99, pf.repair(pf.PUSH)),
    ]
    got = {"frames": 0, "bytes": 0, "last": 0.0, "types": {}}

    def count():
        for frame, h in p.frames(end + WAIT):
            got["frames"] += 1
            got["bytes"] += len(frame)
            got["last"] = time.monotonic()
            t = "%#x" % h["type"]
            got["types"][t] = got["types"].get(t, 0) + 1

    start = time.monotonic()
    end = start + seconds
    counter = threading.Thread(target=count)
    counter.start()
    n = 0
    while time.monotonic() < end:
        for mtype, req, payload in asks:
            p.send(mtype, req, payload, total=len(payload), seg_size=len(payload))
        n += 1
        time.sleep(max(0.0, start + n * TICK - time.monotonic()))
    counter.join()
    answer = LEN + nseg * pf.FRAME_HLEN
    print(json.dumps({
        "sent": p.sent, "sent_bytes": p.sent_bytes, "asked": n * 3 * answer,
        "answer_bytes": answer, "frames": got["frames"], "bytes": got["bytes"],
        "types": got["types"], "flood_s": max(got["last"], end) - start,
    }))


main()
