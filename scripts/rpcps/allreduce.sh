#!/bin/bash
# Experiment: 2 trainers, 0 servers, DummyData and DummyModel, batches of 10, 10 epochs;
# no server: the hook allreduces each bucket among the trainers over gloo.
# Further options go to scripts/rpcps.sh (a later one wins: --epochs 1 shortens it).
exec "$(dirname "$0")/../rpcps.sh" --ntrainer 2 --nserver 0 --epochs 10 --batch_size 10 \
	--data DummyData --model DummyModel --server allreduce "$@"
