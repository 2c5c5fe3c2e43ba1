#!/bin/bash
# Experiment: 2 trainers, 1 server, DummyData and DummyModel, batches of 10, 10 epochs;
# the RPC parameter server: the hook sends each bucket to a torch RPC server, which
# answers every trainer with the sum once all sent it.
# Further options go to scripts/rpcps.sh (a later one wins: --epochs 1 shortens it).
exec "$(dirname "$0")/../rpcps.sh" --ntrainer 2 --nserver 1 --epochs 10 --batch_size 10 \
	--data DummyData --model DummyModel --server rpc "$@"
