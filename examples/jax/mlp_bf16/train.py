#!/usr/bin/env python3
"""The MLP with dropout of ../mlp_dropout with its parameters, and so adam's state, in bfloat16.

The model, loss and step are mlp_dropout's (imported from there); only the parameters are cast
to bf16. Each bf16 tensor is stored in initial_state.safetensors as F32 of the same values
(detrain holds bf16 as f32 and rounds every bf16 op of the step to bf16: docs/ir.md "bf16 and
f16"); the matmuls promote to f32 as JAX does for an f32 input. The last lines export the step
(tools/export_jax.py) and record JAX's own losses for the same batches and keys.

    .venv-jax/bin/python examples/jax/mlp_bf16/train.py        # writes run.json and friends here
    detrain run examples/jax/mlp_bf16/run.json --attest -o /tmp/mlp-bf16-bundle
    detrain verify /tmp/mlp-bf16-bundle
"""
import os
import sys

import jax
import jax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "mlp_dropout"))
import export_jax  # noqa: E402
import train as mlp  # noqa: E402  (examples/jax/mlp_dropout/train.py)


def main():
    x, y = export_jax.read_csv(os.path.join(HERE, "..", "..", "digits", "digits.csv"))
    params = jax.tree_util.tree_map(lambda t: t.astype(jnp.bfloat16),
                                    mlp.init_params(jax.random.PRNGKey(42)))
    opt_state = mlp.optimizer.init(params)
    data = {"name": "csv", "as": "digits", "path": "../../digits/digits.csv", "label": -1,
            "skip_rows": 0, "standardize": False, "validation": 0}
    export_jax.export_train_step(mlp.train_step, params, opt_state, features=x, labels=y,
                                 data=data, out_dir=HERE, batch=mlp.BATCH, steps=mlp.STEPS,
                                 seed=mlp.SEED, checkpoint_every=50, function_name="train_step")
    losses = export_jax.reference_run(mlp.train_step, params, opt_state, features=x, labels=y,
                                      batch=mlp.BATCH, steps=mlp.STEPS, seed=mlp.SEED)
    export_jax.write_reference(os.path.join(HERE, "jax_losses.json"), losses)
    print(f"exported to {HERE}; JAX loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
