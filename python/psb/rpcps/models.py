"""The benchmark's data and models (registered by class name in registry files).

DummyData: sample_count samples of sample_length embedding indices below max_val, with a
class target each, from a seeded generator (every rank makes the same data from the seed).
DummyModel: an EmbeddingBag of num_embeddings x embedding_dim (dense gradients), then
dense_layers_count Linear layers of dense_input_size x dense_output_size with ReLU between.
The default, 1024 x 1024 and 8 layers, holds 9,445,376 parameters: 37.8 MB of float32
gradients per batch.
"""
import torch
from torch import nn

POS = (int, 1, 1 << 30)


class DummyData(torch.utils.data.Dataset):
    TAKES = {"max_val": POS, "sample_count": POS, "sample_length": POS}

    def __init__(self, seed=0, max_val=1024, sample_count=100, sample_length=100):
        g = torch.Generator().manual_seed(seed)
        self.max_val = max_val
        self.input = torch.randint(0, max_val, (sample_count, sample_length), generator=g)
        self.target = torch.randint(0, max_val, (sample_count,), generator=g)

    def __len__(self):
        return len(self.input)

    def __getitem__(self, i):
        return self.input[i], self.target[i]

    def split(self, parts):
        """Round-robin over parts: sample i to part i % parts, as (input, target) tensors."""
        return [(self.input[p::parts].clone(), self.target[p::parts].clone())
                for p in range(parts)]


class DummyModel(nn.Module):
    TAKES = {"num_embeddings": POS, "embedding_dim": POS, "dense_input_size": POS,
             "dense_output_size": POS, "dense_layers_count": (int, 0, 1024)}

    def __init__(self, num_embeddings=1024, embedding_dim=1024, dense_input_size=1024,
                 dense_output_size=1024, dense_layers_count=8):
        super().__init__()
        if dense_layers_count and embedding_dim != dense_input_size:
            raise ValueError("DummyModel: embedding_dim %d must equal dense_input_size %d "
                             "(the embeddings feed the first dense layer)" %
                             (embedding_dim, dense_input_size))
        if dense_layers_count > 1 and dense_input_size != dense_output_size:
            raise ValueError("DummyModel: with %d dense layers dense_input_size %d must "
                             "equal dense_output_size %d" % (dense_layers_count,
                                                             dense_input_size,
                                                             dense_output_size))
        self.embedding = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum")
        layers = []
        for i in range(dense_layers_count):
            layers.append(nn.Linear(dense_input_size, dense_output_size))
            if i + 1 < dense_layers_count:
                layers.append(nn.ReLU())
        self.dense = nn.Sequential(*layers)

    def forward(self, x):
        return self.dense(self.embedding(x))

    def classes(self):
        """How many classes the output scores (the targets must be below it)."""
        last = [m for m in self.dense if isinstance(m, nn.Linear)]
        return last[-1].out_features if last else self.embedding.embedding_dim
