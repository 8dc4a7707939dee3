#!/usr/bin/env python3
"""Export a JAX train step as a detrain run spec (schemas/run-spec.md, docs/jax-training.md).

A train step is the function a JAX/optax training loop already has:

    step(params, opt_state, x, y, key) -> (params, opt_state, loss)

(`key` is a legacy threefry key, uint32[2]; with takes_key=False the step has no key argument).
`export_train_step` flattens its pytrees, lowers it with jax.jit(...).lower(...) and writes, into
`out_dir`:

    run.json                   the run spec: files, each entry parameter's role, data, train settings
    train_step.hlo             the HLO text of the flat step (as_text(dialect="hlo"))
    initial_state.safetensors  the initial parameters and optimizer state, named by pytree path

Then `detrain run OUT/run.json --attest -o BUNDLE` trains it and `detrain verify BUNDLE` replays it.

`reference_run` runs the same loop in JAX itself — the same data order (the split and per-epoch
shuffle permutations of schemas/bundle.md §4.5) and the same step keys (schemas/key-lineage.md:
step t takes fold_in(fold_in(key(seed), 2), t)) — and returns JAX's losses, to compare with
detrain's steps.jsonl (XLA sums in other orders than detrain's canonical ones).

This uses the caller's own JAX; it is never a runtime dependency of detrain. The data source is
a CSV file or a pair of .npy files that detrain reads itself (the spec names them); `features` and
`labels` given here must be what that source parses to, row for row.
"""
import json
import os
import struct
import sys

import numpy as np

FORMAT = "detrain.run-spec"
FORMAT_VERSION = 1


def _features(features):
    """float32 features, or int32 token ids (a text source) as they are."""
    features = np.asarray(features)
    return features if features.dtype == np.int32 else features.astype(np.float32)


def _path_name(path):
    parts = []
    for p in path:
        for attr in ("key", "idx", "name"):
            if hasattr(p, attr):
                parts.append(str(getattr(p, attr)))
                break
        else:
            parts.append(str(p))
    return "/".join(parts)


def _named_leaves(prefix, tree):
    import jax
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree)
    named = []
    for path, leaf in leaves:
        name = prefix + ("/" + _path_name(path) if path else "")
        named.append((name, np.asarray(leaf)))
    return named, treedef


HALF_DTYPES = ("bfloat16", "float16")


def write_safetensors(path, tensors):
    """tensors: list of (name, numpy array) with dtype float32, int32, bfloat16 or float16. bf16
    and f16 tensors are written as F32 of the same values: detrain holds those formats as f32
    (docs/ir.md "bf16 and f16"), and the step's HLO rounds its parameters to their format."""
    dtypes = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}
    header, blobs, offset = {}, [], 0
    for name, array in sorted(tensors, key=lambda t: t[0]):
        array = np.array(array, order="C", copy=True)  # (ascontiguousarray makes 0-d 1-d)
        if str(array.dtype) in HALF_DTYPES:
            array = array.astype(np.float32)
        if array.dtype not in dtypes:
            raise ValueError(f"state tensor {name}: dtype {array.dtype}; detrain state is float32, "
                             "int32, bfloat16 or float16")
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtypes[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def _flat_step(step, p_def, o_def, n_p, n_o, example_shape, takes_key):
    import jax
    import jax.numpy as jnp

    def flat(*args):
        params = jax.tree_util.tree_unflatten(p_def, args[:n_p])
        opt_state = jax.tree_util.tree_unflatten(o_def, args[n_p:n_p + n_o])
        x, y = args[n_p + n_o], args[n_p + n_o + 1]
        x = x.reshape((x.shape[0],) + tuple(example_shape))
        if takes_key:
            params, opt_state, loss = step(params, opt_state, x, y, args[n_p + n_o + 2])
        else:
            params, opt_state, loss = step(params, opt_state, x, y)
        out = jax.tree_util.tree_leaves(params) + jax.tree_util.tree_leaves(opt_state)
        return tuple(out) + (jnp.asarray(loss, jnp.float32),)
    return flat


def export_train_step(step, params, opt_state, *, features, labels, data, out_dir, batch, steps,
                      seed=0, checkpoint_every=0, takes_key=True, example_shape=None,
                      function_name=None):
    """Writes run.json, train_step.hlo and initial_state.safetensors into out_dir.

    features: float32 [rows, F] as detrain's data source parses it (a CSV's feature columns or a
      features .npy); the step sees each batch reshaped to [batch] + example_shape.
    labels: int32 (class ids) or float32 [rows].
    data: the run spec's "data" object (schemas/run-spec.md), e.g. {"name": "csv", "as": "digits",
      "path": "../data.csv", "label": -1, "skip_rows": 0, "standardize": False,
      "validation": 0}; paths are relative to out_dir.
    """
    import jax
    import jax.numpy as jnp

    os.makedirs(out_dir, exist_ok=True)
    features = _features(features)
    labels = np.asarray(labels)
    example_shape = tuple(example_shape or features.shape[1:])
    p_named, p_def = _named_leaves("params", params)
    o_named, o_def = _named_leaves("opt_state", opt_state)
    for name, leaf in p_named:
        if leaf.dtype != np.float32 and str(leaf.dtype) not in HALF_DTYPES:
            raise ValueError(f"parameter {name} is {leaf.dtype}; detrain trains float32, bfloat16 "
                             "or float16 parameters")
    flat = _flat_step(step, p_def, o_def, len(p_named), len(o_named), example_shape, takes_key)
    args = [jnp.asarray(v) for _, v in p_named + o_named]
    args.append(jnp.zeros((batch,) + features.shape[1:], features.dtype))
    args.append(jnp.zeros((batch,) + labels.shape[1:], labels.dtype))
    if takes_key:
        args.append(jnp.zeros((2,), jnp.uint32))
    # keep_unused: the spec lists every argument, used or not.
    hlo = jax.jit(flat, keep_unused=True).lower(*args).as_text(dialect="hlo")
    with open(os.path.join(out_dir, "train_step.hlo"), "w") as f:
        f.write(hlo)
    write_safetensors(os.path.join(out_dir, "initial_state.safetensors"), p_named + o_named)
    entry = [{"role": "parameter", "name": n} for n, _ in p_named]
    entry += [{"role": "optimizer-state", "name": n} for n, _ in o_named]
    entry += [{"role": "batch"}, {"role": "labels"}]
    if takes_key:
        entry.append({"role": "key"})
    spec = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "train_step": "train_step.hlo",
        "initial_state": "initial_state.safetensors",
        "entry": entry,
        "data": data,
        "train": {"steps": steps, "batch": batch, "shards": 1, "seed": seed,
                  "checkpoint_every": checkpoint_every, "eval_every": 0,
                  "prng": "partitionable"},
        "exporter": {"tool": "tools/export_jax.py", "jax": jax.__version__,
                     "python": sys.version.split()[0],
                     "function": function_name or getattr(step, "__name__", "step")},
    }
    with open(os.path.join(out_dir, "run.json"), "w") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")
    return spec


def batch_rows(rows, batch, steps, seed):
    """The row ids of each step's batch, as detrain's TrainingData picks them (validation 0)."""
    import jax
    root = jax.random.PRNGKey(seed)
    split = jax.random.fold_in(root, 1)
    train = np.asarray(jax.random.permutation(split, rows))
    per_epoch = rows // batch
    out, order = [], None
    for t in range(steps):
        e, i = divmod(t, per_epoch)
        if i == 0:
            shuffle = jax.random.fold_in(jax.random.fold_in(root, 3), e)
            order = train[np.asarray(jax.random.permutation(shuffle, rows))]
        out.append(order[i * batch:(i + 1) * batch])
    return out


def step_key(seed, t):
    """Step t's key: fold_in(fold_in(key(seed), 2), t) (schemas/key-lineage.md)."""
    import jax
    return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), 2), t)


def reference_run(step, params, opt_state, *, features, labels, batch, steps, seed=0,
                  takes_key=True, example_shape=None):
    """JAX's own losses for the loop detrain runs: list of float."""
    import jax
    features = _features(features)
    labels = np.asarray(labels)
    example_shape = tuple(example_shape or features.shape[1:])
    jitted = jax.jit(step)
    losses = []
    for t, rows in enumerate(batch_rows(features.shape[0], batch, steps, seed)):
        x = features[rows].reshape((batch,) + example_shape)
        y = labels[rows]
        if takes_key:
            params, opt_state, loss = jitted(params, opt_state, x, y, step_key(seed, t))
        else:
            params, opt_state, loss = jitted(params, opt_state, x, y)
        losses.append(float(loss))
    return losses


def read_csv(path, label=-1):
    """A numeric CSV as detrain reads it (no header): features float32, labels int32."""
    table = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    y = table[:, label].astype(np.int32)
    x = np.delete(table, label % table.shape[1], axis=1).astype(np.float32)
    return x, y


def read_text(path, context):
    """A byte corpus as detrain's text source cuts it: row i is bytes [iT, iT + T) as int32
    inputs and bytes [iT + 1, iT + T + 1) as labels; rows = (size - 1) // T."""
    data = np.frombuffer(open(path, "rb").read(), np.uint8).astype(np.int32)
    rows = (data.size - 1) // context
    x = data[:rows * context].reshape(rows, context)
    y = data[1:rows * context + 1].reshape(rows, context)
    return x, y


def write_reference(path, losses, extra=None):
    record = {"format": "detrain.jax-reference", "losses": losses}
    try:
        import jax
        record["jax"] = jax.__version__
    except ImportError:
        pass
    record.update(extra or {})
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
