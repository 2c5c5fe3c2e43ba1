"""psb frames for the shell tests, as psb_testframe.c makes them for the C ones.

A psb header, an Ethernet + IPv4 + UDP frame around it (IPv4 checksum right, UDP checksum
0 as psb sends), the Internet checksum, and pcap files as libpcap writes them. Import it
with tests/lib on PYTHONPATH.
"""
import socket
import struct

MAGIC = 0x5053
VERSION = 1
UDP_PORT = 9430
PUSH = 0x01
PULL = 0x02
REPAIR = 0x05
BYE = 0x12
ECHO = 0x15
RESP = 0x80
ECHO_RESP = 0x95
ECHO_MAX_LEN = 1024
HDR_LEN = 40
FRAME_HLEN = 14 + 20 + 8 + HDR_LEN	# in front of a psb payload
REPAIR_ROUND = 0x02


SO_RCVBUFFORCE = 33	# Linux's; root may pass rmem_max


def raw_peer(ifname, my_ip, port, rcvbuf):
    """A peer of psb on ifname that sends and reads whole frames (root: AF_PACKET): a
    socket reading IPv4 frames into a buffer of rcvbuf bytes, one sending, one holding UDP
    my_ip:port so that the kernel answers psb's frames to it with nothing, and the
    interface's MAC."""
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
    rx.bind((ifname, 0))
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((ifname, 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((my_ip, port))
    return rx, tx, udp, rx.getsockname()[4]


def csum(b):
    """The Internet checksum of b (an odd length padded with a zero byte)."""
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def mac(m):
    """aa:bb:cc:dd:ee:ff as 6 bytes (bytes pass through)."""
    return m if isinstance(m, bytes) else bytes(int(x, 16) for x in m.split(":"))


def hdr(mtype, flags=0, status=0, sender=0, req=0, rnd=0, key=0, total=0, offset=0,
        seg_len=0, seg_size=0, aux=0, version=VERSION):
    """A 40-byte psb header."""
    return struct.pack("!HBBBBHIIQIIHHI", MAGIC, version, mtype, flags, status, sender, req,
                       rnd, key, total, offset, seg_len, seg_size, aux)


def unhdr(b):
    """A psb header's fields by name, from its 40 bytes."""
    names = ("magic", "version", "type", "flags", "status", "sender", "req", "rnd", "key",
             "total", "offset", "seg_len", "seg_size", "aux")
    return dict(zip(names, struct.unpack("!HBBBBHIIQIIHHI", b[:HDR_LEN])))


def repair(req_type, flags=0, base=0, nbits=0, rnd=0):
    """A REPAIR's record: the request's type, flags, and every one of nbits segments from
    base missing; padded to a multiple of 4 bytes."""
    rec = struct.pack("!BBHIII", req_type, flags, 0, base, nbits, rnd)
    rec += bytes([0xff] * (nbits // 8)) + (bytes([(1 << (nbits % 8)) - 1]) if nbits % 8 else b"")
    return rec + bytes(-len(rec) % 4)


def udp_frame(dmac, smac, sip, dip, sport, dport, payload):
    """An Ethernet + IPv4 + UDP frame carrying payload (IP id 0, DF, TTL 64)."""
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     socket.inet_aton(sip), socket.inet_aton(dip))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return mac(dmac) + mac(smac) + b"\x08\x00" + ip + udp


def write_pcap(path, frames, sec=1700000000):
    """frames into a pcap file, frame i at sec seconds and i microseconds."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", sec, i, len(fr), len(fr)) + fr)


def read_pcap(path):
    """The frames of a pcap file (as write_pcap and libpcap write them), in order."""
    with open(path, "rb") as f:
        b = f.read()
    o, out = 24, []
    while o + 16 <= len(b):
        _, _, caplen, _ = struct.unpack("<IIII", b[o:o + 16])
        out.append(b[o + 16:o + 16 + caplen])
        o += 16 + caplen
    return out
