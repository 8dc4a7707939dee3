#!/usr/bin/env python3
"""Exported JAX train steps under detrain (issue 19; docs/jax-training.md, schemas/run-spec.md).

For each example under examples/jax/ (written by its train.py through tools/export_jax.py, with
JAX's own losses for the same batches and keys in jax_losses.json):

- `detrain run run.json --attest` trains it and `detrain verify` replays it (exit 0), and the
  independent checker tools/check_bundle.py accepts the bundle;
- detrain's loss at every step is JAX's within the example's measured tolerance (XLA sums in
  other orders than detrain's canonical ones; docs/jax-training.md has the figures);
- another thread count (and ISA) give the same final step hash, `detrain diff` says the two
  bundles are identical, and the scalar ISA gives the same state after its first steps;
- the bundle is self-contained: program/ holds the spec, the HLO and the initial state, and
  editing one byte of the HLO there makes verify fail (exit 1);
- what a run spec cannot do is refused with exit 2 and a message (--devices 2).

Needs the detrain binary (DETRAIN_BINARY). The data: digits.csv (tools/setup.sh) and Debian's
GPL-3 text; an example whose data is missing is skipped, saying so."""
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

# example -> (the data file it reads, the largest relative loss difference to JAX allowed at
# any step). The measured differences (docs/jax-training.md) are well below these.
EXAMPLES = {
    "mlp_dropout": (os.path.join(ROOT, "examples", "digits", "digits.csv"), 1e-5),
    "transformer_scan": ("/usr/share/common-licenses/GPL-3", 1e-4),
    "cnn_maxpool": (os.path.join(ROOT, "examples", "digits", "digits.csv"), 1e-5),
    "mlp_bf16": (os.path.join(ROOT, "examples", "digits", "digits.csv"), 1e-5),
}


def run(*args, check=True):
    p = subprocess.run([BINARY] + list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("detrain %s: exit %d\n%s%s" % (" ".join(args), p.returncode,
                                                           p.stdout, p.stderr))
    return p


def final_hash(bundle):
    with open(os.path.join(bundle, "manifest.json")) as f:
        return json.load(f)["final"]["step_hash"]


def state_after(bundle, steps):
    """The training state's digests after `steps` steps (steps.jsonl: a header, then steps 0,
    1, ...): the whole state's and each tensor's. The chain hash itself also covers the run's
    configuration (its step count among it), so a shorter run's differs."""
    with open(os.path.join(bundle, "steps.jsonl")) as f:
        line = json.loads(f.read().splitlines()[steps])
    return line["state"], line["tensors"], line["loss_bits"]


# Steps run on the scalar ISA (a prefix of the full run).
SCALAR_STEPS = 8


def avx2_is_not_the_default():
    """True when this CPU runs AVX-512 by default and also has AVX2 (so --isa avx2 differs)."""
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    return " avx512f" in flags and " avx512dq" in flags and " avx2" in flags


def losses(bundle):
    with open(os.path.join(bundle, "steps.jsonl")) as f:
        return [json.loads(line)["loss"] for line in f.read().splitlines()[1:]]


class JaxExportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="jax_export_test_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def example(self, name):
        data, _ = EXAMPLES[name]
        spec = os.path.join(ROOT, "examples", "jax", name, "run.json")
        if not os.path.exists(spec):
            self.fail(spec + " is missing: run examples/jax/%s/train.py" % name)
        if not os.path.exists(data):
            self.skipTest("%s: no data at %s (tools/setup.sh installs it)" % (name, data))
        return spec

    def check_example(self, name):
        spec = self.example(name)
        _, tolerance = EXAMPLES[name]
        a = os.path.join(self.tmp, name + "-a")
        run("run", spec, "--attest", "-o", a, "-q")
        p = run("verify", a)
        self.assertIn("verified:", p.stdout + p.stderr)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_bundle.py"), a],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("check_bundle: OK", p.stdout + p.stderr)

        with open(os.path.join(os.path.dirname(spec), "jax_losses.json")) as f:
            ref = json.load(f)["losses"]
        ours = losses(a)
        self.assertEqual(len(ours), len(ref))
        worst = max(abs(x - y) / abs(y) for x, y in zip(ours, ref))
        print("%s: %d steps, max relative loss difference to JAX %.3g (allowed %.0e); "
              "loss %.4f -> %.4f" % (name, len(ref), worst, tolerance, ours[0], ours[-1]))
        self.assertLessEqual(worst, tolerance)
        self.assertLess(ours[-1], ours[0] * 0.8, "the model did not train")

        # Other threads and ISA: the same bits. The whole run again on two threads (and AVX2
        # where the default is AVX-512), and the first SCALAR_STEPS steps on the portable scalar
        # path, whose GEMM calls fmaf per element (minutes for the whole transformer run on a
        # 2-core CI machine): its state after them must be the full run's, bit for bit.
        b = os.path.join(self.tmp, name + "-b")
        other_isa = ["--isa", "avx2"] if avx2_is_not_the_default() else []
        run("run", spec, "--attest", "-o", b, "-q", "--threads", "2", *other_isa)
        self.assertEqual(final_hash(a), final_hash(b))
        p = run("diff", a, b, "-q", check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        c = os.path.join(self.tmp, name + "-c")
        run("run", spec, "--attest", "-o", c, "-q", "--threads", "2", "--isa", "scalar",
            "--steps", str(SCALAR_STEPS))
        self.assertEqual(state_after(c, SCALAR_STEPS), state_after(a, SCALAR_STEPS))

        # Self-contained: the program's files are in the bundle, and they are checked.
        self.assertEqual(sorted(os.listdir(os.path.join(a, "program"))),
                         ["initial_state.safetensors", "run.json", "train_step.hlo"])
        for f in ("train_step.hlo", "initial_state.safetensors"):
            with open(os.path.join(os.path.dirname(spec), f), "rb") as x, \
                    open(os.path.join(a, "program", f), "rb") as y:
                self.assertEqual(x.read(), y.read(), f)
        tampered = os.path.join(self.tmp, name + "-tampered")
        shutil.copytree(a, tampered)
        hlo = os.path.join(tampered, "program", "train_step.hlo")
        with open(hlo, "rb") as f:
            text = bytearray(f.read())
        at = text.index(b"constant(") + len(b"constant(")
        text[at:at + 1] = b"7" if text[at:at + 1] != b"7" else b"6"
        with open(hlo, "wb") as f:
            f.write(text)
        p = run("verify", tampered, check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("program/train_step.hlo", p.stdout + p.stderr)

    def test_mlp_with_dropout(self):
        self.check_example("mlp_dropout")

    def test_transformer_with_scan(self):
        self.check_example("transformer_scan")

    def test_cnn_with_max_pool(self):
        self.check_example("cnn_maxpool")

    def test_mlp_with_bf16_state(self):
        self.check_example("mlp_bf16")

    def test_diff_names_the_changed_hlo_line(self):
        # Two exports that differ in one constant of the step (adam's learning rate): diff
        # names the HLO file and its line, with the unified diff, not just the stages.
        src = os.path.dirname(self.example("mlp_dropout"))
        runs = []
        for name, old, new in (("a", None, None), ("b", "constant(0.001)", "constant(0.002)")):
            d = os.path.join(self.tmp, "lr-" + name)
            shutil.copytree(src, d)
            spec = os.path.join(d, "run.json")
            with open(spec) as f:
                j = json.load(f)
            j["data"]["path"] = os.path.join(ROOT, "examples", "digits", "digits.csv")
            with open(spec, "w") as f:
                json.dump(j, f)
            if old:
                hlo = os.path.join(d, "train_step.hlo")
                with open(hlo) as f:
                    text = f.read()
                self.assertIn(old, text)
                with open(hlo, "w") as f:
                    f.write(text.replace(old, new, 1))
            out = os.path.join(self.tmp, "lr-bundle-" + name)
            run("run", spec, "--attest", "-o", out, "--steps", "4", "-q")
            runs.append(out)
        p = run("diff", runs[0], runs[1], check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("first difference: program: program/train_step.hlo differs from line",
                      p.stdout)
        self.assertIn("-  constant.118 = f32[] constant(0.001)", p.stdout)
        self.assertIn("program/initial_state.safetensors: same", p.stdout)
        j = json.loads(run("diff", runs[0], runs[1], "--json", check=False).stdout)
        files = {f["name"]: f for f in j["program"]["files"]}
        self.assertFalse(files["program/train_step.hlo"]["same"])
        self.assertTrue(files["program/initial_state.safetensors"]["same"])

    def test_audit_report_of_an_imported_step(self):
        # The report lists the step's parameters from its initial state (the run spec's
        # configuration has none) and says where the learning-rate schedule is.
        spec = self.example("cnn_maxpool")
        bundle = os.path.join(self.tmp, "report")
        run("run", spec, "--attest", "-o", bundle, "--steps", "3", "-q")
        page = os.path.join(self.tmp, "report.html")
        run("inspect", bundle, "--html", page)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        # conv1 3x3x1x8 + 8, conv2 3x3x8x16 + 16, dense 64x10 + 10.
        self.assertIn("1,898 parameters: <code>params/conv1/b f32[8]</code>", html)
        self.assertIn("inside the imported train step", html)

    def test_what_a_run_spec_cannot_do(self):
        spec = self.example("mlp_dropout")
        p = run("run", spec, "--attest", "-o", os.path.join(self.tmp, "d"), "--devices", "2",
                check=False)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("--devices 2", p.stderr)
        # A spec whose file is missing: the file is named.
        broken = os.path.join(self.tmp, "broken")
        shutil.copytree(os.path.dirname(spec), broken)
        os.remove(os.path.join(broken, "train_step.hlo"))
        with open(os.path.join(broken, "run.json")) as f:
            j = json.load(f)
        j["data"]["path"] = os.path.join(ROOT, "examples", "digits", "digits.csv")
        with open(os.path.join(broken, "run.json"), "w") as f:
            json.dump(j, f)
        p = run("run", os.path.join(broken, "run.json"), "-q", check=False)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("train_step.hlo", p.stderr)
        p = run("compile", os.path.join(broken, "run.json"), check=False)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)

    def test_hostile_spec_files(self):
        # Every file a spec reaches is a regular file or an error with its name: a FIFO (which
        # would block a plain read), a link to /dev/zero (endless), deep nesting, a lying
        # safetensors header. Exit 2 with a message, never a hang, a signal or exit 3.
        spec = self.example("mlp_dropout")
        src = os.path.dirname(spec)

        def copy(name):
            d = os.path.join(self.tmp, name)
            shutil.copytree(src, d)
            with open(os.path.join(d, "run.json")) as f:
                j = json.load(f)
            j["data"]["path"] = os.path.join(ROOT, "examples", "digits", "digits.csv")
            with open(os.path.join(d, "run.json"), "w") as f:
                json.dump(j, f)
            return d

        def refused(path, needle):
            p = subprocess.run([BINARY, "compile", path, "--hashes"], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(needle, p.stderr)

        fifo = copy("fifo")
        os.remove(os.path.join(fifo, "train_step.hlo"))
        os.mkfifo(os.path.join(fifo, "train_step.hlo"))
        refused(os.path.join(fifo, "run.json"), "train_step.hlo")
        os.mkfifo(os.path.join(self.tmp, "spec.json"))
        refused(os.path.join(self.tmp, "spec.json"), "spec.json")

        zero = copy("zero")
        os.remove(os.path.join(zero, "initial_state.safetensors"))
        os.symlink("/dev/zero", os.path.join(zero, "initial_state.safetensors"))
        refused(os.path.join(zero, "run.json"), "initial_state.safetensors")

        lying = copy("lying")
        st = os.path.join(lying, "initial_state.safetensors")
        with open(st, "r+b") as f:
            f.write((2**62).to_bytes(8, "little"))  # header length far past the file's end
        refused(os.path.join(lying, "run.json"), "initial_state.safetensors")

        deep = os.path.join(self.tmp, "deep.json")
        with open(deep, "w") as f:
            f.write("[" * 100000 + "]" * 100000)
        refused(deep, "deep.json")


if __name__ == "__main__":
    unittest.main(verbosity=2)
