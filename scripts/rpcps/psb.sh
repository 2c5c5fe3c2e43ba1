#!/bin/bash
# Experiment: 2 trainers, 1 server, DummyData and DummyModel, batches of 10, 10 epochs;
# psb as the parameter server: the hook pushes each bucket's chunks to psb-ksrv
# (synchronous rounds) and pulls their sums.
# Further options go to scripts/rpcps.sh (a later one wins: --epochs 1 shortens it).
exec "$(dirname "$0")/../rpcps.sh" --ntrainer 2 --nserver 1 --epochs 10 --batch_size 10 \
	--data DummyData --model DummyModel --server psb "$@"
