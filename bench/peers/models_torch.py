"""detrain's three benchmark programs in PyTorch, eager or torch.compile, timed one train step at
a time.

  models_torch.py --model {mlp,digits,charlm} --threads T [--compile] [--steps N] [--warmup W]
  models_torch.py --model mlp --threads T --determinism OUT.npy

One step: zero_grad, forward + loss, backward, (charlm: clip_grad_norm_ and the schedule's
learning rate), optimizer.step(). With --compile, the loss function (forward) and the optimizer
step (clipping included) are each wrapped in torch.compile, as PyTorch's "compiling the
optimizer" recipe does; backward runs AOTAutograd's compiled graph. The learning rate is a tensor
so that the schedule does not recompile. Shapes, initializers, layers and optimizers follow the
.dt programs (see models_jax.py); the convolutions run in NCHW, torch's layout, and flatten in
NHWC order as detrain and JAX do. Attention is F.scaled_dot_product_attention (is_causal), the
fastest way torch offers to compute the same function. torch.set_num_threads(--threads); the CPU
set is the caller's (taskset).
"""
import time

_t0 = time.perf_counter()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import common  # noqa: E402

IMPORT_MS = (time.perf_counter() - _t0) * 1e3


def glorot(shape):
    # Fan-in/fan-out from the last two dimensions, as jax.nn.initializers.glorot_uniform.
    limit = (6.0 / (shape[-2] + shape[-1])) ** 0.5
    return torch.empty(shape).uniform_(-limit, limit)


def he_normal(shape):
    # HWIO kernel: fan-in = KH * KW * I. A plain normal (JAX truncates; the speed is the same).
    fan_in = int(np.prod(shape[:-1]))
    return torch.randn(shape) * (2.0 / fan_in) ** 0.5


def zeros(n):
    return torch.zeros(n)


def mlp(rng):
    c = common.MLP
    s = c["sizes"]
    p = {"w1": glorot((s[0], s[1])), "b1": zeros(s[1]), "w2": glorot((s[1], s[2])),
         "b2": zeros(s[2]), "w3": glorot((s[2], s[3])), "b3": zeros(s[3])}

    def loss(p, x, y):
        h = torch.relu(torch.addmm(p["b1"], x, p["w1"]))
        h = torch.relu(torch.addmm(p["b2"], h, p["w2"]))
        return F.cross_entropy(torch.addmm(p["b3"], h, p["w3"]), y)

    x = torch.from_numpy(rng.random((c["batch"], s[0]), dtype=np.float32))
    y = torch.from_numpy(rng.integers(0, s[-1], c["batch"]))
    return p, loss, (x, y)


def digits(rng):
    c = common.DIGITS
    # OIHW kernels (torch's layout) of the program's 3x3x1x16 and 3x3x16x32 HWIO kernels.
    p = {"k1": he_normal((3, 3, 1, 16)).permute(3, 2, 0, 1).contiguous(), "c1": zeros(16),
         "k2": he_normal((3, 3, 16, 32)).permute(3, 2, 0, 1).contiguous(), "c2": zeros(32),
         "w": glorot((128, 10)), "b": zeros(10)}

    def loss(p, x, y):
        img = (x / 16).reshape(x.shape[0], 1, 8, 8)
        h = F.max_pool2d(torch.relu(F.conv2d(img, p["k1"], p["c1"], padding="same")), 2)
        h = F.max_pool2d(torch.relu(F.conv2d(h, p["k2"], p["c2"], padding="same")), 2)
        h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)  # NHWC flatten order
        return F.cross_entropy(torch.addmm(p["b"], h, p["w"]), y)

    x = torch.from_numpy((rng.random((c["batch"], c["pixels"]), dtype=np.float32) * 16))
    y = torch.from_numpy(rng.integers(0, c["classes"], c["batch"]))
    return p, loss, (x, y)


def charlm(rng):
    c = common.CHARLM
    v, t, d, hid, heads = c["vocab"], c["context"], c["width"], c["hidden"], c["heads"]
    p = {"embed": 0.02 * torch.randn(v, d), "pos": 0.02 * torch.randn(t, d),
         "ln1_g": torch.ones(d), "ln1_b": zeros(d), "wq": glorot((d, d)), "wk": glorot((d, d)),
         "wv": glorot((d, d)), "wo": glorot((d, d)), "ln2_g": torch.ones(d), "ln2_b": zeros(d),
         "w_up": glorot((d, hid)), "b_up": zeros(hid), "w_down": glorot((hid, d)),
         "b_down": zeros(d), "lnf_g": torch.ones(d), "lnf_b": zeros(d),
         "unembed": glorot((d, v))}
    rate = c["dropout"]

    def loss(p, x, y):
        b = x.shape[0]
        h = F.embedding(x, p["embed"]) + p["pos"]
        a_in = F.layer_norm(h, (d,), p["ln1_g"], p["ln1_b"], eps=1e-5)

        def split(w):
            return (a_in @ w).reshape(b, t, heads, d // heads).transpose(1, 2)

        o = F.scaled_dot_product_attention(split(p["wq"]), split(p["wk"]), split(p["wv"]),
                                           is_causal=True)
        a = o.transpose(1, 2).reshape(b, t, d) @ p["wo"]
        h = h + F.dropout(a, rate, training=True)
        m_in = F.layer_norm(h, (d,), p["ln2_g"], p["ln2_b"], eps=1e-5)
        m = F.gelu(m_in @ p["w_up"] + p["b_up"], approximate="tanh") @ p["w_down"] + p["b_down"]
        h = h + F.dropout(m, rate, training=True)
        logits = F.layer_norm(h, (d,), p["lnf_g"], p["lnf_b"], eps=1e-5) @ p["unembed"]
        return F.cross_entropy(logits.reshape(-1, v), y.reshape(-1))

    x = torch.from_numpy(rng.integers(0, v, (c["batch"], t)))
    y = torch.from_numpy(rng.integers(0, v, (c["batch"], t)))
    return p, loss, (x, y)


def main():
    args = common.parse_args(
        "detrain's benchmark programs in PyTorch",
        lambda p: p.add_argument("--compile", action="store_true", help="torch.compile"))
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    params, loss, (x, y) = {"mlp": mlp, "digits": digits, "charlm": charlm}[args.model](
        np.random.default_rng(0))
    for v in params.values():
        v.requires_grad_(True)
    plist = list(params.values())
    c = common.CHARLM
    lr = torch.tensor(0.0)  # charlm's scheduled rate, set before each step
    if args.model == "charlm":
        opt = torch.optim.AdamW(plist, lr=lr, weight_decay=c["weight_decay"])
    else:
        opt = torch.optim.Adam(plist, lr=common.MLP["lr"] if args.model == "mlp" else
                               common.DIGITS["lr"])

    def opt_step():
        if args.model == "charlm":
            torch.nn.utils.clip_grad_norm_(plist, c["clip"])
        opt.step()

    loss_fn = loss
    if args.compile:
        loss_fn = torch.compile(loss)
        opt_step = torch.compile(opt_step)
    setup_ms = (time.perf_counter() - t0) * 1e3
    count = [0]

    def step():
        if args.model == "charlm":
            lr.fill_(common.warmup_cosine_decay(count[0], 0.0, c["peak"], c["warmup_steps"],
                                                c["decay_steps"]))
        opt.zero_grad(set_to_none=True)
        loss_fn(params, x, y).backward()
        opt_step()
        count[0] += 1

    if args.determinism:
        for _ in range(5):
            step()
        leaves = [params[k].detach().numpy().ravel() for k in sorted(params)]  # as models_jax
        np.save(args.determinism, np.concatenate(leaves))
        return
    common.measure("torch.compile" if args.compile else "torch", args, step, IMPORT_MS, setup_ms,
                   version=torch.__version__, torch_threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
