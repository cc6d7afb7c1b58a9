#!/usr/bin/python3
"""torch_ref.py: the PyTorch 1.13 reference for examples/fashion_mnist.

Trains the same model as our example (mlp, cnn or lstm) with the same
hyperparameters (Adam lr 1e-3, eps 1e-7; batch 128 for the MLP and the
LSTM, 64 for the CNN; the same number of epochs; a fresh shuffle each epoch) on the same
Fashion-MNIST files and prints `test_accuracy: X` last, so the two can be
compared (they should agree within 1 point).

  /usr/bin/python3 examples/fashion_mnist/torch_ref.py mlp 10
  /usr/bin/python3 examples/fashion_mnist/torch_ref.py cnn 5
  /usr/bin/python3 examples/fashion_mnist/torch_ref.py lstm 5

lstm reads each image row by row: 28 steps of 28 pixels into one nn.LSTM
layer (hidden 128, gates i f g o), and a Linear(128, 10) on the last
hidden state."""
import gzip
import sys
import time

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist/"


def idx(name):
    with gzip.open(DATA + name, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class RowLSTM(nn.Module):
    """28 rows of 28 pixels -> LSTM(hidden 128) -> the last h -> 10 logits."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(28, 128, batch_first=True)
        self.out = nn.Linear(128, 10)

    def forward(self, x):
        h, _ = self.lstm(x.reshape(-1, 28, 28))
        return self.out(h[:, -1, :])


def main():
    model_name = sys.argv[1] if len(sys.argv) > 1 else "mlp"
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    torch.set_num_threads(2)
    torch.manual_seed(1)
    xtr = torch.from_numpy(idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255)
    ytr = torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    xte = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255)
    yte = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    if model_name == "mlp":
        batch = 128
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                              nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    elif model_name == "lstm":
        batch = 128
        model = RowLSTM()
    else:
        batch = 64
        model = nn.Sequential(
            nn.Unflatten(1, (1, 28)), nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(),
            nn.MaxPool2d(2), nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(7 * 7 * 64, 256), nn.ReLU(),
            nn.Linear(256, 10))
        xtr, xte = xtr.reshape(-1, 28, 28), xte.reshape(-1, 28, 28)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.time()
    for epoch in range(epochs):
        perm = torch.randperm(xtr.shape[0])
        for i in range(0, xtr.shape[0] - batch + 1, batch):
            idxs = perm[i:i + batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xtr[idxs]), ytr[idxs])
            loss.backward()
            opt.step()
        print("epoch %d loss %.4f (%.1f s)" % (epoch + 1, loss.item(), time.time() - t0),
              flush=True)
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    print("test_accuracy: %.4f" % acc)


if __name__ == "__main__":
    main()
