#!/usr/bin/python3
"""torch_train.py: the PyTorch side of `make bench-train`.

Driven by bench/bench_train.c over stdin/stdout, so that our training steps
and PyTorch's alternate in one run on the same machine state. It builds the
same models as ours (MLP 784-256-128-10 with ReLU; CNN conv5x5x32 SAME +
ReLU + maxpool2, conv5x5x64 SAME + ReLU + maxpool2, dense 256 + ReLU, dense
10; LSTM: 28 rows of 28 pixels into nn.LSTM(28, 128), Linear(128, 10) on
the last hidden state; bn_cnn: the example's MobileNet-style CNN with
BatchNorm2d(momentum=0.01, eps=1e-3) in train mode and depthwise convs as
Conv2d(groups=cin), no biases), the same optimizer (Adam, lr 1e-3, TF's defaults beta1 0.9, beta2
0.999, eps 1e-7... PyTorch's eps is 1e-8; we pass 1e-7 to match) and trains
on a fixed ready batch read from the .npy files the C side writes.
`depthwise` is not a model: one step is F.conv2d(x, w, padding=1,
groups=128) forward on x [64, 128, 14, 14], w [128, 1, 3, 3] and the
gradients of x and w for a fixed random output gradient (torch.autograd.
grad), the counterpart of our DepthwiseConv2dNative and its two backprops.

Commands (one per line) and replies:
  load DIR         reads DIR/mlp_x.npy, mlp_y.npy, cnn_x.npy, cnn_y.npy -> "ok"
  run MODEL N      N timed steps (forward, backward, update) -> "ms t1 t2 ..."
  rss              peak resident set size -> "rss KB"
  quit
Run with OMP_WAIT_POLICY=PASSIVE; it calls torch.set_num_threads(2)."""
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(2)
torch.manual_seed(1)


def mlp():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 256), nn.ReLU(), nn.Linear(256, 10))


def separable(cin, cout):
    return [nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False),
            nn.Conv2d(cin, cout, 1, bias=False),
            nn.BatchNorm2d(cout, momentum=0.01, eps=1e-3), nn.ReLU()]


def bn_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False),
        nn.BatchNorm2d(32, momentum=0.01, eps=1e-3), nn.ReLU(),
        *separable(32, 64), nn.MaxPool2d(2),
        *separable(64, 128), nn.MaxPool2d(2),
        *separable(128, 128),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))


class Depthwise:
    """Depthwise 3x3 conv forward + backward (dx, dw) on fixed tensors."""

    def __init__(self):
        self.x = torch.rand(64, 128, 14, 14, requires_grad=True)
        self.w = torch.rand(128, 1, 3, 3, requires_grad=True)
        self.dy = torch.rand(64, 128, 14, 14)

    def step(self):
        y = torch.nn.functional.conv2d(self.x, self.w, padding=1, groups=128)
        return torch.autograd.grad(y, (self.x, self.w), self.dy)


class RowLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(28, 128, batch_first=True)
        self.out = nn.Linear(128, 10)

    def forward(self, x):
        h, _ = self.lstm(x)
        return self.out(h[:, -1, :])


class Trainer:
    def __init__(self, model, x, y):
        self.model, self.x, self.y = model, x, y
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
        self.loss = nn.CrossEntropyLoss()

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        out = self.model(self.x)
        loss = self.loss(out, self.y)
        loss.backward()
        self.opt.step()
        return loss


def main():
    trainers = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "load":
            d = words[1]
            mx = torch.from_numpy(np.load(d + "/mlp_x.npy"))
            my = torch.from_numpy(np.load(d + "/mlp_y.npy").astype(np.int64))
            cx = torch.from_numpy(np.load(d + "/cnn_x.npy"))
            cy = torch.from_numpy(np.load(d + "/cnn_y.npy").astype(np.int64))
            # NHWC on our side; PyTorch wants NCHW.
            cx = cx.reshape(-1, 28, 28, 1).permute(0, 3, 1, 2).contiguous()
            trainers["mlp"] = Trainer(mlp(), mx.reshape(-1, 784), my)
            trainers["cnn"] = Trainer(cnn(), cx, cy)
            trainers["lstm"] = Trainer(RowLSTM(), mx.reshape(-1, 28, 28), my)
            trainers["bn_cnn"] = Trainer(bn_cnn(), cx, cy)
            trainers["depthwise"] = Depthwise()
            print("ok", flush=True)
        elif words[0] == "run":
            t = trainers[words[1]]
            times = []
            for _ in range(int(words[2])):
                t0 = time.perf_counter()
                t.step()
                times.append((time.perf_counter() - t0) * 1e3)
            print("ms " + " ".join("%.4f" % v for v in times), flush=True)
        elif words[0] == "rss":
            print("rss %d" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  flush=True)
        elif words[0] == "quit":
            break


if __name__ == "__main__":
    main()
