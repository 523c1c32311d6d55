"""A small PyTorch training loop for gpu-probe's profiler.

It trains a convolutional network on random images on the one GPU that
CUDA_VISIBLE_DEVICES selects and prints its rate as the last line,
"rate: <training steps per second>", the protocol gpu.ParseRate reads.

    gpu-probe -repeats 3 python3 examples/gpu-probe/train.py [--steps N] [--batch B]
"""
import argparse
import time

import torch
import torch.nn as nn


def model():
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(256, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible")
    dev = torch.device("cuda")
    torch.manual_seed(0)
    net = model().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(args.batch, 3, 64, 64, device=dev)
    y = torch.randint(0, 10, (args.batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(net(x), y).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    print(f"device: {torch.cuda.get_device_name(0)}")
    print(f"rate: {args.steps / elapsed:.3f}")


if __name__ == "__main__":
    main()
