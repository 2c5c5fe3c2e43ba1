"""Trainers: DdpTrainer trains a DDP model among the trainers (gloo) whose communication
hook sends each gradient bucket away (psb, the RPC parameter server, or allreduce).

Per batch it records batch_level_metric/batch_all (the whole batch: forward, backward with
the hooks' futures, optimizer step), forward_metric/forward_pass (the model and the loss)
and backward_metric/backward (backward, which ends once every bucket's future completed).
"""
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class DdpTrainer:
    TAKES = {"lr": (float, 0, 100)}

    def __init__(self, rank, ctx, hook, lr=0.01):
        self.rank = rank
        self.ctx = ctx
        self.hook = hook
        self.lr = lr
        self.rec = ctx["recorder"]

    def train(self, model, data, epochs, batch_size, batches):
        """batches: batches an epoch (every trainer runs as many: DDP needs them all)."""
        ddp = DDP(model, process_group=self.ctx["group"])
        ddp.register_comm_hook(self.hook, type(self.hook).hook)
        loss_fn = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(ddp.parameters(), lr=self.lr)
        x, y = data
        n = 0
        for _ in range(epochs):
            for b in range(batches):
                xb, yb = x[b * batch_size:(b + 1) * batch_size], y[b * batch_size:(b + 1) *
                                                                   batch_size]
                self.hook.batch = n
                self.rec.start("batch_level_metric", "batch_all", n)
                self.rec.start("forward_metric", "forward_pass", n)
                loss = loss_fn(ddp(xb), yb)
                self.rec.end("forward_metric", "forward_pass", n, n)
                self.rec.start("backward_metric", "backward", n)
                opt.zero_grad()
                loss.backward()
                self.rec.end("backward_metric", "backward", n, n)
                opt.step()
                self.rec.end("batch_level_metric", "batch_all", n, n)
                n += 1
        return n


CLASSES = {"DdpTrainer": DdpTrainer}
