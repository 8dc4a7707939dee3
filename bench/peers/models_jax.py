"""detrain's three benchmark programs in JAX + optax, timed one train step at a time.

  models_jax.py --model {mlp,digits,charlm} --threads T [--steps N] [--warmup W]
  models_jax.py --model mlp --determinism OUT.npy

One step is a `jax.jit` of value_and_grad(loss) + the optax update + apply_updates, with the
parameters and optimizer state donated (updated in place), as a JAX user would write it; the
batch is synthetic (uniform pixels, random labels and tokens) and the same every step. The
shapes, initializers, layers and optimizers follow the .dt programs and docs/language.md:
  mlp     bench/mlp/train.dt        784-1024-1024-10 relu, batch 256, adam(1e-3)
  digits  examples/digits/train.dt  conv3x3 SAME 1->16, relu, maxpool 2; conv 16->32, relu,
                                    maxpool 2; dense 128->10; batch 64, adam(3e-3)
  charlm  examples/charlm/train.dt  one pre-norm block, 4 heads, causal, dropout 0.1, tanh gelu,
                                    layer_norm eps 1e-5; batch 32, context 32, vocab 256;
                                    clip_by_global_norm(1.0) + adamw(warmup_cosine_decay(0, 3e-3,
                                    20, 300), weight_decay 1e-4)
XLA:CPU takes its thread count from the CPU set: run under `taskset` (run.sh does).
"""
import time

_t0 = time.perf_counter()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import common  # noqa: E402

IMPORT_MS = (time.perf_counter() - _t0) * 1e3
glorot = jax.nn.initializers.glorot_uniform()
he = jax.nn.initializers.he_normal()


def xent(logits, labels):
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, labels))


def mlp(key, rng):
    c = common.MLP
    sizes = c["sizes"]
    keys = jax.random.split(key, len(sizes) - 1)
    params = {}
    for i in range(len(sizes) - 1):
        params[f"w{i + 1}"] = glorot(keys[i], (sizes[i], sizes[i + 1]), jnp.float32)
        params[f"b{i + 1}"] = jnp.zeros((sizes[i + 1],), jnp.float32)

    def loss(p, x, y, _):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        h = jax.nn.relu(h @ p["w2"] + p["b2"])
        return xent(h @ p["w3"] + p["b3"], y)

    x = rng.random((c["batch"], sizes[0]), dtype=np.float32)
    y = rng.integers(0, sizes[-1], c["batch"]).astype(np.int32)
    return params, loss, optax.adam(c["lr"]), (x, y)


def digits(key, rng):
    c = common.DIGITS
    k = jax.random.split(key, 3)
    params = {"k1": he(k[0], (3, 3, 1, 16), jnp.float32), "c1": jnp.zeros((16,), jnp.float32),
              "k2": he(k[1], (3, 3, 16, 32), jnp.float32), "c2": jnp.zeros((32,), jnp.float32),
              "w": glorot(k[2], (128, 10), jnp.float32), "b": jnp.zeros((10,), jnp.float32)}
    dims = ("NHWC", "HWIO", "NHWC")

    def pool(h):
        return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def loss(p, x, y, _):
        img = (x / 16).reshape(x.shape[0], 8, 8, 1)
        h = jax.lax.conv_general_dilated(img, p["k1"], (1, 1), "SAME", dimension_numbers=dims)
        h = pool(jax.nn.relu(h + p["c1"]))
        h = jax.lax.conv_general_dilated(h, p["k2"], (1, 1), "SAME", dimension_numbers=dims)
        h = pool(jax.nn.relu(h + p["c2"]))
        return xent(h.reshape(h.shape[0], -1) @ p["w"] + p["b"], y)

    x = (rng.random((c["batch"], c["pixels"]), dtype=np.float32) * 16).astype(np.float32)
    y = rng.integers(0, c["classes"], c["batch"]).astype(np.int32)
    return params, loss, optax.adam(c["lr"]), (x, y)


def layer_norm(x, g, b, eps=1e-5):
    mean = jnp.mean(x, -1, keepdims=True)
    c = x - mean
    var = jnp.mean(c * c, -1, keepdims=True)
    return c * jax.lax.rsqrt(var + eps) * g + b


def attention(x, wq, wk, wv, wo, heads):
    # As flax.linen.MultiHeadDotProductAttention with a causal mask (detrain's lowering).
    b, t, d = x.shape
    dh = d // heads

    def split(w):
        return (x @ w).reshape(b, t, heads, dh).transpose(0, 2, 1, 3)

    q, k, v = split(wq), split(wk), split(wv)
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(dh))
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -jnp.inf)
    o = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)
    return o.transpose(0, 2, 1, 3).reshape(b, t, d) @ wo


def dropout(x, rate, key):
    keep = 1.0 - rate
    return jnp.where(jax.random.bernoulli(key, keep, x.shape), x / keep, 0)


def charlm(key, rng):
    c = common.CHARLM
    v, t, d, hid = c["vocab"], c["context"], c["width"], c["hidden"]
    shapes = {"embed": (v, d), "pos": (t, d), "ln1_g": (d,), "ln1_b": (d,), "wq": (d, d),
              "wk": (d, d), "wv": (d, d), "wo": (d, d), "ln2_g": (d,), "ln2_b": (d,),
              "w_up": (d, hid), "b_up": (hid,), "w_down": (hid, d), "b_down": (d,),
              "lnf_g": (d,), "lnf_b": (d,), "unembed": (d, v)}
    keys = jax.random.split(key, len(shapes))
    params = {}
    for (name, shape), k in zip(shapes.items(), keys):
        if name in ("embed", "pos"):
            params[name] = 0.02 * jax.random.normal(k, shape, jnp.float32)
        elif name.endswith("_g"):
            params[name] = jnp.ones(shape, jnp.float32)
        elif len(shape) == 1:
            params[name] = jnp.zeros(shape, jnp.float32)
        else:
            params[name] = glorot(k, shape, jnp.float32)

    def loss(p, x, y, key):
        h = p["embed"][x] + p["pos"]
        a = attention(layer_norm(h, p["ln1_g"], p["ln1_b"]), p["wq"], p["wk"], p["wv"], p["wo"],
                      c["heads"])
        h = h + dropout(a, c["dropout"], jax.random.fold_in(key, 0))
        m = jax.nn.gelu(layer_norm(h, p["ln2_g"], p["ln2_b"]) @ p["w_up"] + p["b_up"],
                        approximate=True) @ p["w_down"] + p["b_down"]
        h = h + dropout(m, c["dropout"], jax.random.fold_in(key, 1))
        return xent(layer_norm(h, p["lnf_g"], p["lnf_b"]) @ p["unembed"], y)

    schedule = optax.warmup_cosine_decay_schedule(0.0, c["peak"], c["warmup_steps"],
                                                  c["decay_steps"])
    tx = optax.chain(optax.clip_by_global_norm(c["clip"]),
                     optax.adamw(schedule, weight_decay=c["weight_decay"]))
    x = rng.integers(0, v, (c["batch"], t)).astype(np.int32)
    y = rng.integers(0, v, (c["batch"], t)).astype(np.int32)
    return params, loss, tx, (x, y)


def main():
    args = common.parse_args("detrain's benchmark programs in JAX + optax")
    t0 = time.perf_counter()
    params, loss, tx, (x, y) = {"mlp": mlp, "digits": digits, "charlm": charlm}[args.model](
        jax.random.key(0), np.random.default_rng(0))
    opt_state = tx.init(params)
    root = jax.random.key(1)
    x, y = jnp.asarray(x), jnp.asarray(y)

    def train_step(params, opt_state, x, y, count):
        value, grads = jax.value_and_grad(loss)(params, x, y, jax.random.fold_in(root, count))
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    step_fn = jax.jit(train_step, donate_argnums=(0, 1))
    jax.block_until_ready((params, opt_state, x, y))
    setup_ms = (time.perf_counter() - t0) * 1e3
    state = {"params": params, "opt": opt_state, "count": 0}

    def step():
        p, o, value = step_fn(state["params"], state["opt"], x, y, jnp.int32(state["count"]))
        jax.block_until_ready((p, o, value))
        state.update(params=p, opt=o, count=state["count"] + 1)

    if args.determinism:
        for _ in range(5):
            step()
        # Sorted by name (jit returns the dict as a pytree, keys sorted), as models_torch.py.
        leaves = [np.asarray(v).ravel() for v in state["params"].values()]
        np.save(args.determinism, np.concatenate(leaves))
        return
    device = jax.devices()[0]
    common.measure("jax", args, step, IMPORT_MS, setup_ms, version=jax.__version__,
                   optax=optax.__version__, platform=device.platform,
                   device=getattr(device, "device_kind", str(device)))


if __name__ == "__main__":
    main()
