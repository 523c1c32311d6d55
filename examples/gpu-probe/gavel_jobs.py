"""Gavel's job types as PyTorch training loops, for gpu-probe's profiler.

Each run trains one job type at one batch size on random data, on the one GPU
that CUDA_VISIBLE_DEVICES selects, and prints its rate as the last line,
"rate: <training steps per second>", the protocol gpu.ParseRate reads; run
by gpu.Profiler.ProfilePairs beside another job, it keeps the co-location
barrier (colocate.py), so it times its steps only while the other job trains:

    python3 examples/gpu-probe/gavel_jobs.py --job resnet18 --batch 128

The models follow the workloads behind Gavel's measured throughputs
(data/gavel/simulation_throughputs.json), as far as they can be rebuilt
offline: no datasets or pretrained weights are read, so each step's input is
random data of the real shapes, and input pipelines (which bound some of
Gavel's jobs, such as Recommendation) are not measured.

    resnet18        ResNet-18 for CIFAR-10 (3x3 stem, 32x32 images, 10 classes)
    resnet50        ResNet-50 for ImageNet (torchvision's, 224x224, 1000 classes)
    transformer     Transformer base (6+6 layers, d=512) translating 30-token
                    sentences with 10,000-word vocabularies
    lm              2-layer LSTM language model (200 units, 35-token windows,
                    Wikitext-2's 33,278-word vocabulary)
    recommendation  autoencoder collaborative filtering over 20,000 items
                    (512-512-1024 SELU layers, dropout 0.8)
    a3c             A3C's actor-critic (4 convolutions and an LSTM cell on 42x42
                    frames), a 20-step rollout and one update per step
    cyclegan        CycleGAN (two 9-block ResNet generators, two PatchGAN
                    discriminators, 256x256 images), one generator and one
                    discriminator update per step

Every job trains in float32 with PyTorch's default math settings.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import colocate


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + self.short(x))


class CifarResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


def classifier(net, batch, shape, classes, dev):
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, *shape, device=dev)
    y = torch.randint(0, classes, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(x), y).backward()
        opt.step()
    return step


def resnet18(batch, dev):
    return classifier(CifarResNet18().to(dev), batch, (3, 32, 32), 10, dev)


def resnet50(batch, dev):
    import torchvision
    return classifier(torchvision.models.resnet50(weights=None).to(dev), batch, (3, 224, 224), 1000, dev)


class Translator(nn.Module):
    def __init__(self, vocab, d=512):
        super().__init__()
        self.src = nn.Embedding(vocab, d)
        self.tgt = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, 128, d) * 0.02)
        self.t = nn.Transformer(d, 8, 6, 6, 2048, 0.1, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        n = tgt.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf"), device=tgt.device), 1)
        s = self.src(src) + self.pos[:, : src.shape[1]]
        t = self.tgt(tgt) + self.pos[:, :n]
        return self.out(self.t(s, t, tgt_mask=mask))


def transformer(batch, dev, vocab=10000, length=30):
    net = Translator(vocab).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    src = torch.randint(0, vocab, (batch, length), device=dev)
    tgt = torch.randint(0, vocab, (batch, length + 1), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = net(src, tgt[:, :-1])
        F.cross_entropy(logits.reshape(-1, vocab), tgt[:, 1:].reshape(-1), label_smoothing=0.1).backward()
        opt.step()
    return step


class LanguageModel(nn.Module):
    def __init__(self, vocab, units=200):
        super().__init__()
        self.emb = nn.Embedding(vocab, units)
        self.rnn = nn.LSTM(units, units, 2, dropout=0.2)
        self.drop = nn.Dropout(0.2)
        self.dec = nn.Linear(units, vocab)

    def forward(self, x, h):
        y, h = self.rnn(self.drop(self.emb(x)), h)
        return self.dec(self.drop(y)), h


def lm(batch, dev, vocab=33278, bptt=35):
    net = LanguageModel(vocab).to(dev)
    x = torch.randint(0, vocab, (bptt, batch), device=dev)
    y = torch.randint(0, vocab, (bptt, batch), device=dev)
    zeros = torch.zeros(2, batch, 200, device=dev)
    state = [(zeros, zeros)]

    def step():
        # The word_language_model example's step: detached hidden state,
        # plain SGD with gradient clipping at 0.25.
        net.zero_grad(set_to_none=True)
        out, h = net(x, tuple(t.detach() for t in state[0]))
        state[0] = h
        F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1)).backward()
        nn.utils.clip_grad_norm_(net.parameters(), 0.25)
        with torch.no_grad():
            for p in net.parameters():
                p.add_(p.grad, alpha=-20)
    return step


def recommendation(batch, dev, items=20000):
    sizes = [items, 512, 512, 1024]
    enc = [m for a, b in zip(sizes, sizes[1:]) for m in (nn.Linear(a, b), nn.SELU())]
    back = sizes[::-1]
    dec = [m for a, b in zip(back, back[1:]) for m in (nn.Linear(a, b), nn.SELU())]
    net = nn.Sequential(*enc, nn.Dropout(0.8), *dec[:-1]).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
    # Ratings are sparse: about 1% of the items rated, from 1 to 5.
    x = torch.where(torch.rand(batch, items, device=dev) < 0.01,
                    torch.randint(1, 6, (batch, items), device=dev).float(), torch.zeros((), device=dev))
    rated = (x > 0).float()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = ((net(x) - x) ** 2 * rated).sum() / rated.sum().clamp(min=1)
        loss.backward()
        opt.step()
    return step


class ActorCritic(nn.Module):
    def __init__(self, actions=6):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(1 if i == 0 else 32, 32, 3, 2, 1) for i in range(4)])
        self.cell = nn.LSTMCell(32 * 3 * 3, 256)
        self.actor = nn.Linear(256, actions)
        self.critic = nn.Linear(256, 1)

    def forward(self, x, hc):
        for c in self.convs:
            x = F.elu(c(x))
        h, c = self.cell(x.flatten(1), hc)
        return self.actor(h), self.critic(h), (h, c)


def a3c(batch, dev, rollout=20):
    net = ActorCritic().to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    frames = torch.randn(rollout, batch, 1, 42, 42, device=dev)
    rewards = torch.randn(rollout, batch, device=dev)

    def step():
        hc = (torch.zeros(batch, 256, device=dev), torch.zeros(batch, 256, device=dev))
        policy_loss = value_loss = 0
        ret = torch.zeros(batch, device=dev)
        outs = []
        for t in range(rollout):
            logits, value, hc = net(frames[t], hc)
            outs.append((logits, value.squeeze(1)))
        for t in reversed(range(rollout)):
            logits, value = outs[t]
            ret = rewards[t] + 0.99 * ret
            adv = ret - value
            logp = F.log_softmax(logits, 1)
            entropy = -(logp.exp() * logp).sum(1)
            action = torch.multinomial(logp.exp().detach(), 1).squeeze(1)
            taken = logp.gather(1, action[:, None]).squeeze(1)
            policy_loss = policy_loss - (taken * adv.detach() + 0.01 * entropy).mean()
            value_loss = value_loss + 0.5 * (adv ** 2).mean()
        opt.zero_grad(set_to_none=True)
        (policy_loss + 0.5 * value_loss).backward()
        nn.utils.clip_grad_norm_(net.parameters(), 50)
        opt.step()
    return step


class ResBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(1), nn.Conv2d(ch, ch, 3), nn.InstanceNorm2d(ch), nn.ReLU(True),
            nn.ReflectionPad2d(1), nn.Conv2d(ch, ch, 3), nn.InstanceNorm2d(ch))

    def forward(self, x):
        return x + self.body(x)


def generator(ngf=64, blocks=9):
    m = [nn.ReflectionPad2d(3), nn.Conv2d(3, ngf, 7), nn.InstanceNorm2d(ngf), nn.ReLU(True)]
    for i in range(2):
        a = ngf * 2 ** i
        m += [nn.Conv2d(a, 2 * a, 3, 2, 1), nn.InstanceNorm2d(2 * a), nn.ReLU(True)]
    m += [ResBlock(ngf * 4) for _ in range(blocks)]
    for i in range(2):
        a = ngf * 2 ** (2 - i)
        m += [nn.ConvTranspose2d(a, a // 2, 3, 2, 1, output_padding=1), nn.InstanceNorm2d(a // 2), nn.ReLU(True)]
    m += [nn.ReflectionPad2d(3), nn.Conv2d(ngf, 3, 7), nn.Tanh()]
    return nn.Sequential(*m)


def discriminator(ndf=64):
    m = [nn.Conv2d(3, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True)]
    for cin, cout, stride in ((1, 2, 2), (2, 4, 2), (4, 8, 1)):
        m += [nn.Conv2d(ndf * cin, ndf * cout, 4, stride, 1), nn.InstanceNorm2d(ndf * cout), nn.LeakyReLU(0.2, True)]
    m += [nn.Conv2d(ndf * 8, 1, 4, 1, 1)]
    return nn.Sequential(*m)


def cyclegan(batch, dev):
    g_ab, g_ba, d_a, d_b = (m.to(dev) for m in (generator(), generator(), discriminator(), discriminator()))
    opt_g = torch.optim.Adam(list(g_ab.parameters()) + list(g_ba.parameters()), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(list(d_a.parameters()) + list(d_b.parameters()), lr=2e-4, betas=(0.5, 0.999))
    real_a = torch.randn(batch, 3, 256, 256, device=dev)
    real_b = torch.randn(batch, 3, 256, 256, device=dev)

    def gan(pred, real):
        return F.mse_loss(pred, torch.full_like(pred, 1.0 if real else 0.0))

    def step():
        fake_b, fake_a = g_ab(real_a), g_ba(real_b)
        loss_g = (gan(d_b(fake_b), True) + gan(d_a(fake_a), True)
                  + 10 * (F.l1_loss(g_ba(fake_b), real_a) + F.l1_loss(g_ab(fake_a), real_b))
                  + 5 * (F.l1_loss(g_ab(real_b), real_b) + F.l1_loss(g_ba(real_a), real_a)))
        opt_g.zero_grad(set_to_none=True)
        loss_g.backward()
        opt_g.step()
        loss_d = 0.5 * (gan(d_a(real_a), True) + gan(d_a(fake_a.detach()), False)
                        + gan(d_b(real_b), True) + gan(d_b(fake_b.detach()), False))
        opt_d.zero_grad(set_to_none=True)
        loss_d.backward()
        opt_d.step()
    return step


JOBS = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "transformer": transformer,
    "lm": lm,
    "recommendation": recommendation,
    "a3c": a3c,
    "cyclegan": cyclegan,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", required=True, choices=sorted(JOBS))
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=2.0, help="timed training, after warm-up")
    ap.add_argument("--warmup", type=int, default=5, help="steps before timing")
    ap.add_argument("--device", default="cuda", help="cpu runs the same code without a GPU")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible")
    dev = torch.device(args.device)
    torch.manual_seed(0)
    step = JOBS[args.job](args.batch, dev)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    barrier = colocate.Barrier.from_env()
    for _ in range(args.warmup):
        step()
    sync()
    if barrier:
        barrier.ready()
    # Time whole steps until the budget is spent, in chunks that double up to
    # 32 steps: the clock is read only after a synchronisation, and the chunks
    # keep those from stalling the GPU's queue between short steps.
    steps, chunk, start = 0, 1, time.perf_counter()
    while True:
        for _ in range(chunk):
            step()
        steps += chunk
        sync()
        elapsed = time.perf_counter() - start
        if steps >= 3 and elapsed >= args.seconds:
            break
        chunk = min(2 * chunk, 32)
    if barrier:
        # Synchronised steps, so the queue holds at most one when the partner
        # is done too.
        barrier.done(lambda: (step(), sync()))
    if dev.type == "cuda":
        print(f"device: {torch.cuda.get_device_name(0)}")
    print(f"steps: {steps} in {elapsed:.3f} s")
    print(f"rate: {steps / elapsed:.4f}")


if __name__ == "__main__":
    main()
