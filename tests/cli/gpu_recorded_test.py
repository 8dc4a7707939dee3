#!/usr/bin/env python3
"""The CPU reproduces runs made on a GPU (docs/cuda.md §7).

tests/cli/gpu_recorded.json holds the final step hashes of runs that tools/gpu-check.sh made on a
real GPU (which GPU, driver, toolkit and commit are recorded there). Each run is made again here
with the CPU backend, on 2 threads, in the plan format the GPU ran, and must reach the same final
step hash: the GPU's bits are the CPU's, on a machine with no GPU. A run whose data is missing is skipped, saying so.

Needs the detrain binary (DETRAIN_BINARY)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("DETRAIN_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BINARY = os.environ.get("DETRAIN_BINARY", os.path.join(ROOT, "build", "src", "cli", "detrain"))
RECORD = os.path.join(ROOT, "tests", "cli", "gpu_recorded.json")

# The data each program reads (tools/setup.sh installs them).
DATA = {
    "examples/breast_cancer/train.dt":
        "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv",
    "examples/jax/mlp_dropout/run.json": os.path.join(ROOT, "examples", "digits", "digits.csv"),
    "examples/jax/cnn_maxpool/run.json": os.path.join(ROOT, "examples", "digits", "digits.csv"),
    "examples/jax/transformer_scan/run.json": "/usr/share/common-licenses/GPL-3",
}


class GpuRecordedTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpu_recorded_test_")
        with open(RECORD) as f:
            self.record = json.load(f)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_record_is_complete(self):
        self.assertGreaterEqual(len(self.record["runs"]), 4)
        for key in ("date", "commit", "gpu", "toolkit"):
            self.assertTrue(self.record["recorded"].get(key), key)
        for r in self.record["runs"]:
            self.assertIn(r["program"], DATA)
            self.assertRegex(r["final_step_hash"], "^[0-9a-f]{64}$")

    def test_cpu_reaches_the_gpu_final_step_hash(self):
        gpu = self.record["recorded"]["gpu"]
        for r in self.record["runs"]:
            with self.subTest(program=r["program"]):
                if not os.path.exists(DATA[r["program"]]):
                    print("skipped %s: no data at %s" % (r["program"], DATA[r["program"]]),
                          file=sys.stderr)
                    continue
                bundle = os.path.join(self.tmp, os.path.basename(os.path.dirname(r["program"])))
                # The plan format the GPU ran (the step hashes commit to the plan's digest); a
                # record made before the field was named ran format 2.
                plan_format = str(self.record["recorded"].get("plan_format", 2))
                p = subprocess.run([BINARY, "run", os.path.join(ROOT, r["program"]), "--attest",
                                    "-o", bundle, "-q", "--threads", "2", "--backend", "cpu",
                                    "--plan-format", plan_format],
                                   capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                with open(os.path.join(bundle, "manifest.json")) as f:
                    final = json.load(f)["final"]
                self.assertEqual(final["steps_done"], r["steps"])
                self.assertEqual(final["step_hash"], r["final_step_hash"],
                                 "%s: the CPU's final step hash is not the one %s gave; if the "
                                 "change was meant to alter training bits, record the GPU's "
                                 "again (tools/gpu-check.sh)" % (r["program"], gpu))


if __name__ == "__main__":
    unittest.main(verbosity=2)
