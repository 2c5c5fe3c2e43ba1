#!/usr/bin/env python3
"""Scrape every counter export of a psb worker and server, as scripts/bench/ctl.sh does.

  ctl_scrape.py WCTL SCTL WTEL STEL WPROM SPROM
      10 Hz until killed: control-socket counters, telemetry /psb/counters and the
      Prometheus page of both processes; prints the number of rounds done.
  ctl_scrape.py WCTL SCTL WTEL STEL WPROM SPROM --paired N
      N pairs of 2 s windows without and with that scrape (order swapped every pair),
      measuring the worker's requests/s in each; prints the result as JSON.
"""
import json
import socket
import statistics
import sys
import time
import urllib.request


def ctl(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s.makefile("rw")


def tel(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    s.recv(16384)
    return s


def main():
    wctl, sctl, wtel, stel, wprom, sprom = sys.argv[1:7]
    cw, cs, tw, ts = ctl(wctl), ctl(sctl), tel(wtel), tel(stel)

    def scrape_once():
        for f in (cw, cs):
            f.write('{"cmd":"counters"}\n')
            f.flush()
            json.loads(f.readline())
        for t in (tw, ts):
            t.send(b"/psb/counters")
            json.loads(t.recv(1 << 20))
        for port in (wprom, sprom):
            urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=2).read()

    def for_a_while(seconds, scrape):
        """10 Hz rounds for seconds (forever when None); a round that scrapes nothing sleeps."""
        t0, n = time.monotonic(), 0
        while seconds is None or time.monotonic() - t0 < seconds:
            t1 = time.monotonic()
            if scrape:
                scrape_once()
                n += 1
                if seconds is None:
                    print(n, flush=True)
            time.sleep(max(0, 0.1 - (time.monotonic() - t1)))

    if len(sys.argv) < 9 or sys.argv[7] != "--paired":
        for_a_while(None, True)
        return
    st = ctl(wctl)

    def requests():
        st.write('{"cmd":"status"}\n')
        st.flush()
        return json.loads(st.readline())["experiment"]["pushpull"]["requests"]

    rate = {"off": [], "on": []}
    for k in range(int(sys.argv[8])):
        for phase in (("off", "on") if k % 2 == 0 else ("on", "off")):
            r0, t0 = requests(), time.monotonic()
            for_a_while(2.0, phase == "on")
            r1, t1 = requests(), time.monotonic()
            rate[phase].append((r1 - r0) / (t1 - t0))
    ratios = [a / b for a, b in zip(rate["on"], rate["off"])]
    print(json.dumps({"window_s": 2.0, "pairs": len(ratios), "requests_per_s": rate,
                      "pair_ratios": ratios, "median_pair_ratio": statistics.median(ratios)}))


if __name__ == "__main__":
    main()
