#!/usr/bin/python3
"""torch_ref.py: the PyTorch 1.13 reference for examples/fashion_mnist.

Trains the same model as our example (mlp, cnn, lstm or bn_cnn) with the
same hyperparameters (Adam lr 1e-3, eps 1e-7; batch 128 for the MLP and
the LSTM, 64 for the CNN and bn_cnn; the same number of epochs; a fresh shuffle each epoch) on the same
Fashion-MNIST files and prints `test_accuracy: X` last, so the two can be
compared (they should agree within 1 point).

  /usr/bin/python3 examples/fashion_mnist/torch_ref.py mlp 10
  /usr/bin/python3 examples/fashion_mnist/torch_ref.py cnn 5
  /usr/bin/python3 examples/fashion_mnist/torch_ref.py lstm 5
  /usr/bin/python3 examples/fashion_mnist/torch_ref.py bn_cnn 5

lstm reads each image row by row: 28 steps of 28 pixels into one nn.LSTM
layer (hidden 128, gates i f g o), and a Linear(128, 10) on the last
hidden state.

bn_cnn is the example's MobileNet-style CNN: Conv2d 3x3x32 (no bias) +
BatchNorm2d + ReLU; separable 3x3 -> 64 (depthwise Conv2d with
groups=cin, then a 1x1 Conv2d, no biases) + BN + ReLU; MaxPool2d(2);
separable 3x3 -> 128 + BN + ReLU; MaxPool2d(2); separable 3x3 -> 128 + BN +
ReLU; AdaptiveAvgPool2d(1); Linear(128, 10). BatchNorm2d(momentum=0.01,
eps=1e-3) is Keras's momentum 0.99 (PyTorch's momentum is 1 - Keras's);
the test pass runs in eval mode (the running statistics)."""
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


def separable(cin, cout):
    """Keras's SeparableConv2D 3x3 SAME without bias, then BN and ReLU."""
    return [nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False),
            nn.Conv2d(cin, cout, 1, bias=False),
            nn.BatchNorm2d(cout, momentum=0.01, eps=1e-3), nn.ReLU()]


def bn_cnn():
    return nn.Sequential(
        nn.Unflatten(1, (1, 28)),
        nn.Conv2d(1, 32, 3, padding=1, bias=False),
        nn.BatchNorm2d(32, momentum=0.01, eps=1e-3), nn.ReLU(),
        *separable(32, 64), nn.MaxPool2d(2),
        *separable(64, 128), nn.MaxPool2d(2),
        *separable(128, 128),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))


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
    elif model_name == "bn_cnn":
        batch = 64
        model = bn_cnn()
        xtr, xte = xtr.reshape(-1, 28, 28), xte.reshape(-1, 28, 28)
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
    model.train()
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
    model.eval()  # batch norm: the running statistics
    with torch.no_grad():
        # In chunks of 1000, as our example feeds it (bounded memory).
        correct = sum((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                      for i in range(0, xte.shape[0], 1000))
        acc = correct / xte.shape[0]
    print("test_accuracy: %.4f" % acc)


if __name__ == "__main__":
    main()
