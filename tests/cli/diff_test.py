#!/usr/bin/env python3
"""`detrain diff A B` on pairs of real bundles (docs/diff.md, issue 20):

- identical runs on different thread and device counts, and a packed archive of one: exit 0,
  "identical", the thread counts listed as not part of the claim;
- a one-character program edit, a changed learning rate, a different seed, one CSV cell changed,
  a run to 40 steps against the same run to 80 (a prefix): exit 1, each with the right first
  difference — checked against the bundles' own step logs, read here independently;
- the first differing tensor element from a replay, from checkpoints, and what diff says when
  it cannot replay (--no-replay, the data gone);
- --html: one self-contained page; hostile and unfinished inputs: exit 2 with a message, never
  a signal.

Needs the detrain binary (DETRAIN_BINARY)."""
import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.environ.get("DETRAIN_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BINARY = os.environ.get("DETRAIN_BINARY", os.path.join(ROOT, "build", "src", "cli", "detrain"))
SCALE = int(os.environ.get("DETRAIN_TIME_SCALE", "1"))

PROGRAM = """\
data d = csv("data.csv", label = -1, validation = 0.2)

param w1: f32[4, 8] = glorot_uniform
param b1: f32[8]    = zeros
param w2: f32[8, 2] = glorot_uniform
param b2: f32[2]    = zeros

def loss(x: f32[B, 4], y: s32[B], key) -> f32[] {
  h = relu(x @ w1 + b1)
  h = dropout(h, rate = 0.1, key = key)
  return mean(softmax_cross_entropy(h @ w2 + b2, y))
}

def predict(x: f32[B, 4]) -> f32[B, 2] {
  return relu(x @ w1 + b1) @ w2 + b2
}

metrics = [accuracy, loss]
optimizer = adam(learning_rate = 1e-2)
train(steps = 40, batch = 16, shards = 2, seed = 3, checkpoint_every = 10, eval_every = 10)
"""

CHANGED_LINE = 57  # 0-based data row whose third column the "cell" variant changes


def Data():
    r = random.Random(5)
    rows = []
    for _ in range(200):
        x = [round(r.uniform(-2, 2), 3) for _ in range(4)]
        rows.append(x + [1 if x[0] + 0.5 * x[1] - x[2] > 0 else 0])
    return rows


def WriteRun(directory, program=PROGRAM, rows=None):
    os.makedirs(directory)
    with open(os.path.join(directory, "train.dt"), "w") as f:
        f.write(program)
    with open(os.path.join(directory, "data.csv"), "w") as f:
        for row in rows or Data():
            f.write(",".join(str(v) for v in row) + "\n")
    return os.path.join(directory, "train.dt")


def Run(args, code=0, timeout=600):
    p = subprocess.run([BINARY] + args, capture_output=True, text=True, timeout=timeout * SCALE)
    if p.returncode != code:
        raise AssertionError("detrain %s exited %d, expected %d:\n%s%s" %
                             (" ".join(args), p.returncode, code, p.stdout[-4000:], p.stderr[-4000:]))
    return p


def Diff(a, b, code, *extra):
    p = Run(["diff", a, b, "--json", "-q"] + list(extra), code)
    return json.loads(p.stdout)


def Steps(bundle):
    with open(os.path.join(bundle, "steps.jsonl")) as f:
        return [json.loads(line) for line in f][1:]


def FirstDifferingStep(a, b):
    """The first step whose batch, key, loss or state differs, read from the step logs."""
    for ra, rb in zip(Steps(a), Steps(b)):
        for field in ("batch", "key", "learning_rate_bits", "loss_bits", "state"):
            if ra[field] != rb[field]:
                return ra["step"]
    return None


class Diff_(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="detrain_diff_")
        t = cls.tmp
        base = WriteRun(os.path.join(t, "base"))
        cls.a = os.path.join(t, "A")
        Run(["run", base, "--attest", "-o", cls.a, "-q"])
        cls.same = os.path.join(t, "same")
        Run(["run", base, "--attest", "-o", cls.same, "-q", "--threads", "2", "--devices", "2"])
        cls.long = os.path.join(t, "long")
        Run(["run", base, "--attest", "-o", cls.long, "-q", "--steps", "80"])
        variants = {
            "edit": PROGRAM.replace("rate = 0.1", "rate = 0.2"),
            "lr": PROGRAM.replace("learning_rate = 1e-2", "learning_rate = 2e-2"),
            "seed": PROGRAM.replace("seed = 3", "seed = 4"),
        }
        cls.bundles = {}
        for name, text in variants.items():
            assert text != PROGRAM
            program = WriteRun(os.path.join(t, name), text)
            cls.bundles[name] = os.path.join(t, name, "bundle")
            Run(["run", program, "--attest", "-o", cls.bundles[name], "-q"])
        rows = Data()
        rows[CHANGED_LINE][2] = round(rows[CHANGED_LINE][2] + 0.5, 3)
        program = WriteRun(os.path.join(t, "cell"), rows=rows)
        cls.bundles["cell"] = os.path.join(t, "cell", "bundle")
        Run(["run", program, "--attest", "-o", cls.bundles["cell"], "-q"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_identical_on_other_thread_and_device_counts(self):
        r = Diff(self.a, self.same, 0)
        self.assertTrue(r["identical"])
        self.assertEqual(r["verdict"], "identical")
        self.assertEqual(r["differences"], [])
        self.assertTrue(any("threads: 1 -> 2" in n for n in r["notes"]), r["notes"])
        self.assertTrue(any("devices: 1 -> 2" in n for n in r["notes"]), r["notes"])
        text = Run(["diff", self.a, self.same, "-q"], 0).stdout
        self.assertIn("identical", text.splitlines()[2])

    def test_a_packed_archive_reads_as_its_bundle(self):
        archive = os.path.join(self.tmp, "A.tar")
        if not os.path.exists(archive):
            Run(["pack", self.a, "-o", archive])
        r = Diff(archive, self.same, 0)
        self.assertTrue(r["identical"])
        self.assertEqual(len(r["a"]["archive_sha256"]), 64)

    def test_backend_and_executable_are_not_part_of_the_claim(self):
        # A's manifest as a CUDA run would write it (run.backend "cuda" and the executable's
        # records; no GPU is needed to compare records): still identical, with both listed.
        cuda = os.path.join(self.tmp, "as-cuda")
        if not os.path.exists(cuda):
            shutil.copytree(self.a, cuda)
            path = os.path.join(cuda, "manifest.json")
            with open(path) as f:
                m = json.load(f)
            m["run"]["backend"] = "cuda"
            m["executables"] = {"cuda": [{"stage": "cuda", "number": 4, "file": "04.cuda.cu",
                                          "sha256": "00" * 32, "size": 1}]}
            with open(path, "w") as f:
                json.dump(m, f)
        r = Diff(self.a, cuda, 0)
        self.assertTrue(r["identical"])
        self.assertTrue(any(n.startswith("run.backend: cpu -> cuda") for n in r["notes"]), r["notes"])
        self.assertTrue(any("only the other bundle holds a CUDA executable" in n for n in r["notes"]),
                        r["notes"])
        self.assertEqual(r["executables"]["records"][0]["absent"], "a")

    def test_one_character_program_edit(self):
        b = self.bundles["edit"]
        r = Diff(self.a, b, 1)
        self.assertFalse(r["identical"])
        self.assertTrue(r["first_difference"].startswith("program:"), r["first_difference"])
        self.assertIn("\n-  h = dropout(h, rate = 0.1, key = key)\n+  h = dropout(h, rate = 0.2, key = key)\n",
                      r["program"]["diff"])
        self.assertEqual(r["program"]["first_line"], 10)
        self.assertTrue(r["data"]["same"])
        self.assertTrue(r["config"]["same"])
        # The first differing stage is the source graph, at the dropout's keep probability.
        first = r["stages"]["first"]
        self.assertEqual(first["stage"], "source")
        self.assertIn("0.9", first["text"]["a"])
        self.assertIn("0.8", first["text"]["b"])
        self.assertTrue(any(p["stage"] == "opt-hlo" and "input already differs" in p["first_difference"]
                            for p in r["stages"]["passes"]), r["stages"]["passes"])
        t = r["training"]
        self.assertEqual(t["first_chain_difference"], 0)
        c = t["first_content_difference"]
        self.assertEqual(c["step"], FirstDifferingStep(self.a, b))
        self.assertIn("loss", c["fields"])
        self.assertNotIn("batch", c["fields"])  # same data, same seed: the same rows
        # No checkpoint after step 0: the element comes from replaying both bundles.
        self.assertIn("replay", c["state_source_a"])
        self.AssertElement(c)

    def AssertElement(self, c):
        e = c["element"]
        self.assertIn(e["tensor"], c["tensors"])
        self.assertNotEqual(e["a"], e["b"])
        self.assertGreaterEqual(e["differing_elements"], 1)

    def test_changed_learning_rate(self):
        b = self.bundles["lr"]
        r = Diff(self.a, b, 1)
        self.assertEqual(r["config"]["fields"],
                         [{"field": "optimizer.learning_rate.value", "a": 0.01, "b": 0.02}])
        self.assertIn("-optimizer = adam(learning_rate = 1e-2)\n+optimizer = adam(learning_rate = 2e-2)",
                      r["program"]["diff"])
        self.assertEqual(r["stages"]["first"]["stage"], "source")
        c = r["training"]["first_content_difference"]
        self.assertEqual(c["step"], 0)
        self.assertIn("learning_rate", c["fields"])
        self.assertEqual(c["a"]["learning_rate"], "0.00999999978 (0x3c23d70a)")
        self.assertEqual(c["b"]["learning_rate"], "0.0199999996 (0x3ca3d70a)")
        self.AssertElement(c)

    def test_different_seed(self):
        b = self.bundles["seed"]
        r = Diff(self.a, b, 1)
        self.assertEqual(r["seed"], {"a": 3, "b": 4})
        self.assertIn({"field": "train.seed", "a": 3, "b": 4}, r["config"]["fields"])
        split = r["data"]["split"]["train"]
        self.assertFalse(split["same"])
        self.assertGreater(split["differing_positions"], 0)
        self.assertEqual(split["rows_a"], 160)
        c = r["training"]["first_content_difference"]
        self.assertEqual(c["step"], 0)
        for field in ("batch", "key", "loss", "state"):
            self.assertIn(field, c["fields"])
        self.assertEqual(c["a"]["key"], Steps(self.a)[0]["key"])
        self.assertEqual(c["b"]["key"], Steps(b)[0]["key"])
        self.AssertElement(c)

    def test_one_csv_cell_changed(self):
        b = self.bundles["cell"]
        r = Diff(self.a, b, 1)
        self.assertTrue(r["program"]["same"])
        f = r["data"]["files"][0]
        self.assertFalse(f["same"])
        content = f["content"]
        self.assertEqual(content["kind"], "lines")
        self.assertEqual(content["differing_lines_in_common_length"], 1)
        self.assertEqual(content["first"]["line"], CHANGED_LINE + 1)
        self.assertTrue(r["first_difference"].startswith("data: data.csv differs (1 of 200 lines"))
        # The split depends on the seed and the row count only.
        self.assertTrue(r["data"]["split"]["train"]["same"])
        c = r["training"]["first_content_difference"]
        self.assertEqual(c["step"], FirstDifferingStep(self.a, b))
        self.assertIn("batch", c["fields"])
        self.assertNotIn("key", c["fields"])
        # The batch of that step holds the changed row, at the changed column.
        be = c["batch_element"]["first"]
        self.assertEqual(be["data_row_a"], CHANGED_LINE)
        self.assertEqual(be["data_row_b"], CHANGED_LINE)
        self.assertTrue(be["index"].endswith(", 2]"), be["index"])
        self.AssertElement(c)
        # Every step before it is the same in both logs.
        for ra, rb in zip(Steps(self.a)[:c["step"]], Steps(b)[:c["step"]]):
            self.assertEqual(ra["state"], rb["state"])

    def test_a_run_to_40_steps_is_a_prefix_of_one_to_80(self):
        r = Diff(self.a, self.long, 1)
        t = r["training"]
        self.assertEqual(t["prefix"], "a")
        self.assertIsNone(t["first_content_difference"])
        self.assertEqual((t["steps_a"], t["steps_b"]), (40, 80))
        self.assertIn("A's 40 steps are the first 40 of B's 80", t["prefix_text"])
        self.assertEqual(r["run"]["fields"], [{"field": "steps", "a": 40, "b": 80}])
        self.assertTrue(r["stages"]["same"])
        r = Diff(self.long, self.a, 1)
        self.assertEqual(r["training"]["prefix"], "b")

    def test_element_from_checkpoints_without_replay(self):
        # The changed row is first drawn in step 9 (seed 3's shuffle), and a checkpoint follows
        # step 9: without replay the element comes from the two checkpoints; the batch's rows
        # need the data and a replay, and the report says they were not compared.
        r = Diff(self.a, self.bundles["cell"], 1, "--no-replay")
        c = r["training"]["first_content_difference"]
        self.assertEqual(c["step"], 9)
        self.assertEqual(c["state_source_a"], "checkpoints/step-00000010.safetensors")
        self.assertEqual(c["state_source_b"], "checkpoints/step-00000010.safetensors")
        self.AssertElement(c)
        self.assertNotIn("batch_element", c)
        self.assertIn("not compared", c["batch_note"])
        # Step 0 of the edit variant has no checkpoint after it: nothing to compare.
        r = Diff(self.a, self.bundles["edit"], 1, "--no-replay")
        c = r["training"]["first_content_difference"]
        self.assertNotIn("element", c)
        self.assertIn("replay is off", c["element_note"])

    def test_without_the_data_it_says_so(self):
        # A copy of the cell variant whose data file is gone: inputs and stages still compare.
        src = os.path.join(self.tmp, "cell")
        dst = os.path.join(self.tmp, "cell-nodata")
        if not os.path.exists(dst):
            shutil.copytree(src, dst)
            os.remove(os.path.join(dst, "data.csv"))
            # The bundle's environment.json still points at src's program; move src's data
            # aside for the duration of this test.
        aside = os.path.join(self.tmp, "aside")
        os.makedirs(aside, exist_ok=True)
        moved = os.path.join(aside, "data.csv")
        shutil.move(os.path.join(src, "data.csv"), moved)
        try:
            r = Diff(self.a, os.path.join(dst, "bundle"), 1)
            self.assertFalse(r["data"]["files"][0]["same"])
            self.assertIn("not available", r["data"]["files"][0]["content"]["problem"])
            self.assertIn("--data", r["data"]["files"][0]["content"]["problem"])
            # The state after the first differing step is in both bundles' checkpoints; the
            # batches' rows need the data, and the report says why they were not compared.
            c = r["training"]["first_content_difference"]
            self.AssertElement(c)
            self.assertIn("not found", c["batch_note"])
            self.assertNotIn("batch_element", c)
            # --data with the file: replay and content come back.
            r = Diff(self.a, os.path.join(dst, "bundle"), 1, "--data", aside)
            self.assertEqual(r["data"]["files"][0]["content"]["kind"], "lines")
            self.assertEqual(r["training"]["first_content_difference"]["batch_element"]["first"]
                             ["data_row_b"], CHANGED_LINE)
        finally:
            shutil.move(moved, os.path.join(src, "data.csv"))

    def test_html_is_one_self_contained_page(self):
        page = os.path.join(self.tmp, "diff.html")
        Run(["diff", self.a, self.bundles["cell"], "--html", page, "-q"], 1)
        with open(page) as f:
            html = f.read()
        self.assertIn('data-verdict="different"', html)
        self.assertIn("Content-Security-Policy", html)
        self.assertNotIn("<script", html.lower())
        self.assertNotIn("http://", html.replace("http://www.w3.org/2000/svg", ""))
        self.assertIn('id="plot-loss"', html)
        page2 = os.path.join(self.tmp, "diff2.html")
        Run(["diff", self.a, self.bundles["cell"], "--html", page2, "-q"], 1)
        with open(page2) as f:
            self.assertEqual(f.read(), html)  # deterministic
        Run(["diff", self.a, self.same, "--html", page, "-q"], 0)
        with open(page) as f:
            self.assertIn('data-verdict="identical"', f.read())

    def test_hostile_and_unfinished_inputs(self):
        t = tempfile.mkdtemp(dir=self.tmp)

        def Expect2(path, words):
            p = Run(["diff", self.a, path, "-q"], 2)
            self.assertIn(words, p.stderr)
            self.assertEqual(p.stdout, "")

        Expect2(os.path.join(t, "missing"), "no such")
        Expect2("/dev/zero", "")
        fifo = os.path.join(t, "fifo")
        os.mkfifo(fifo)
        Expect2(fifo, "")
        os.makedirs(os.path.join(t, "empty"))
        Expect2(os.path.join(t, "empty"), "not a bundle")
        # An unfinished bundle: progress.json, no manifest.
        unfinished = os.path.join(t, "unfinished")
        shutil.copytree(self.a, unfinished)
        os.remove(os.path.join(unfinished, "manifest.json"))
        with open(os.path.join(unfinished, "progress.json"), "w") as f:
            f.write("{}\n")
        Expect2(unfinished, "incomplete")
        bad = os.path.join(t, "bad")
        shutil.copytree(self.a, bad)
        manifest = os.path.join(bad, "manifest.json")
        for text, words in [("{", "manifest.json"), ("[" * 100000 + "]" * 100000, "manifest.json"),
                            ('{"format": "detrain.bundle", "format_version": 2}', "format version 2"),
                            ('{"format": "other"}', "not a detrain bundle manifest"),
                            ("\x00\xff", "manifest.json")]:
            with open(manifest, "w", encoding="latin-1") as f:
                f.write(text)
            Expect2(bad, words)
        # A manifest of the right format whose fields have the wrong types: a report, no crash.
        with open(os.path.join(self.a, "manifest.json")) as f:
            good = json.load(f)
        for field, value in [("stages", 5), ("program", []), ("config", "x"), ("run", None),
                             ("checkpoints", [{"steps_done": "1", "path": 3}]),
                             ("stages", [{"stage": 1}, {"stage": "source", "number": 1, "sha256": 7,
                                                        "file": "../../../../../../etc/passwd"}]),
                             ("program", {"path": "../../../../../../etc/passwd", "sha256": "0"})]:
            broken = dict(good)
            broken[field] = value
            with open(manifest, "w") as f:
                json.dump(broken, f)
            p = Run(["diff", self.a, bad, "-q", "--json"], 1)
            json.loads(p.stdout)
            self.assertNotIn("root:", p.stdout)  # nothing outside the bundle is read
        # A torn or garbled step log: the records before it are compared, and it says so.
        with open(manifest, "w") as f:
            json.dump(good, f)
        with open(os.path.join(bad, "steps.jsonl"), "r+b") as f:
            f.seek(0, 2)
            f.truncate(f.tell() - 40)
        r = Diff(self.a, bad, 1)
        self.assertIn("steps.jsonl line", r["b"]["steps_problem"])
        # Usage errors.
        Run(["diff", self.a], 2)
        Run(["diff", self.a, self.same, "--threads", "0"], 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
