"""A psb worker's results file after a --verify run: every iteration done, none failed,
every pulled value as expected.  usage: check_worker.py RESULTS.json KEYS REPEAT"""
import json
import sys

r = json.load(open(sys.argv[1]))
keys, repeat = int(sys.argv[2]), int(sys.argv[3])
assert r["iterations"] == repeat, r
assert r["failed"] == 0 and r["verify_errors"] == 0, r
assert r["keys"] == keys, r
