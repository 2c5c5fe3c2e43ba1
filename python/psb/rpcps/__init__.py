"""The PyTorch parameter-server benchmark on psb: DDP trainers whose communication hook sends
each gradient bucket to psb's servers (or to an RPC parameter server, or allreduces it),
with data, models, trainers, servers and hooks registered by id in JSON configuration files.

    python3 -m psb.rpcps --ntrainer 2 --nserver 1 --epochs 10 --batch_size 10 \\
        --data DummyData --model DummyModel --server psb

docs/RPCPS.md is its manual; scripts/rpcps.sh builds psb and runs it.
"""
