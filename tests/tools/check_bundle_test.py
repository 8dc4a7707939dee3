#!/usr/bin/env python3
"""Tests of tools/check_bundle.py, the independent bundle checker: it passes real bundles that
detrain writes (both step-digest policies, embedded data or not, a run a NaN stopped), reports
an interrupted one as incomplete, and fails every kind of tampering — also a consistent forgery
that rewrites the manifest, its root digest and the final weights — with a message that names
what is wrong. The consistent forgeries are also given to `detrain verify`, which must fail them
too (schemas/bundle.md §10 records what it does not catch). Needs the detrain binary
(DETRAIN_BINARY, which CTest sets); skipped without it."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle_testlib as lib  # noqa: E402
from bundle_testlib import cb  # noqa: E402


def Check(bundle, *args):
    p = subprocess.run([sys.executable, lib.CHECKER, bundle, *args], capture_output=True,
                       text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def Verify(bundle, *args):
    p = lib.Detrain("verify", *args, bundle, check=False)
    return p.returncode, p.stdout + p.stderr


@unittest.skipUnless(lib.Binary(), "needs the detrain binary (DETRAIN_BINARY)")
class CheckBundleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.b = lib.Bundles()
        cls.embedded = cls.b.Run("embedded", "--embed-data")
        cls.sha256 = cls.b.Run("sha256", "--step-digest", "sha256")
        cls.chunked = cls.b.Run("chunked", "--step-digest", "xxh3-128-chunked")
        cls.stopped = cls.b.Stopped("stopped")

    @classmethod
    def tearDownClass(cls):
        cls.b.Close()

    def assertPasses(self, bundle, *args):
        code, out = Check(bundle, *args)
        self.assertEqual(code, 0, out)
        self.assertIn("check_bundle: OK", out)
        return out

    def assertFails(self, bundle, message, code=1):
        got, out = Check(bundle)
        self.assertEqual(got, code, out)
        self.assertIn(message, out)

    def assertVerifyFails(self, bundle, message, *args):
        got, out = Verify(bundle, *args)
        self.assertEqual(got, 1, out)
        self.assertIn("FAILED", out)
        self.assertIn(message, out)

    def assertVerifies(self, bundle, *args):
        got, out = Verify(bundle, *args)
        self.assertEqual(got, 0, out)
        return out

    def Tampered(self, name, src=None):
        return self.b.Copy(src or self.embedded, name)

    # ---- real bundles ----

    def testRealBundlesPass(self):
        out = self.assertPasses(self.embedded)
        for line in ("root digest", "each size and Merkle root", "chained from genesis",
                     "rebuilt byte for byte", "2 checkpoint(s)", "equal to step 23's"):
            self.assertIn(line, out)
        self.assertPasses(self.sha256)
        self.assertIn("state digests", self.assertPasses(self.sha256))
        self.assertIn("chained from genesis", self.assertPasses(self.chunked))
        self.assertIn("verified", self.assertVerifies(self.chunked))

    @unittest.skipUnless(cb.xxhash, "needs the xxhash module")
    def testChunkedStateDigestsAreRecomputed(self):
        self.assertIn("state digests", self.assertPasses(self.chunked))
        # A checkpoint's tensors recomputed under the other XXH3 policy would not match.
        self.assertNotEqual(cb.xxh3_tensor("w", "f32", [2], b"\0" * 8),
                            cb.xxh3_chunked_tensor("w", "f32", [2], b"\0" * 8))

    def testNonEmbeddedDataIsCheckedWhereTheRunFoundIt(self):
        out = self.assertPasses(self.sha256, "--data", lib.TINY)
        self.assertIn("ok  dataset tiny.csv", out)

    def testAStoppedRunPasses(self):
        m = lib.Manifest(self.stopped)
        self.assertEqual(m["status"], "stopped")
        out = self.assertPasses(self.stopped)
        self.assertIn("not tied to a record", out)
        self.assertIn("not checked: stop.reason", out)
        # verify derives the lineage of count + 1 steps and replays the step that failed.
        self.assertIn("the run stopped: step 1: loss is NaN", self.assertVerifies(self.stopped))

    def testTheManifestRootDigestIsTheCanonicalBodysSha256(self):
        m = lib.Manifest(self.embedded)
        body = {k: v for k, v in m.items() if k != "root_digest"}
        self.assertEqual(cb.sha256(cb.canonical_bytes(body)).hex(), m["root_digest"])

    # ---- incomplete and unjudgeable ----

    def testAnInterruptedBundleIsIncomplete(self):
        d = self.b.Interrupted("interrupted")
        self.assertTrue(os.path.exists(os.path.join(d, "progress.json")))
        self.assertFails(d, "INCOMPLETE")

    def testInputErrors(self):
        self.assertFails(self.b.Path("no-such-bundle"), "no such bundle directory", code=2)
        d = self.Tampered("v2")
        m = lib.Manifest(d)
        m["format_version"] = 2
        lib.WriteBytes(d, "manifest.json", cb.canonical_bytes(m) + b"\n")
        self.assertFails(d, "format version 2", code=2)

    def testProgressJsonInACompleteBundle(self):
        d = self.Tampered("progress")
        lib.WriteBytes(d, "progress.json", b"{}\n")
        self.assertFails(d, "progress.json is present")

    # ---- accidents and naive tampering (the manifest is not rewritten) ----

    def testAFlippedByteInAnyListedFile(self):
        for rel in ("stages/03.opt-hlo.hlo", "steps.jsonl", "checkpoints/step-00000008.safetensors",
                    "data/files/tiny.csv", "lineage.jsonl"):
            d = self.Tampered("flip")
            data = bytearray(lib.ReadBytes(d, rel))
            data[len(data) // 2] ^= 0x01
            lib.WriteBytes(d, rel, bytes(data))
            self.assertFails(d, rel + ": Merkle root differs")

    def testATruncatedFile(self):
        d = self.Tampered("truncated")
        lib.WriteBytes(d, "run.json", lib.ReadBytes(d, "run.json")[:-5])
        self.assertFails(d, "run.json: ")

    def testAnEditedManifest(self):
        d = self.Tampered("manifest")
        text = lib.ReadBytes(d, "manifest.json").replace(b'"seed":3', b'"seed":4')
        lib.WriteBytes(d, "manifest.json", text)
        self.assertFails(d, "is not the SHA-256 of its canonical body")

    def testExtraAndMissingFiles(self):
        d = self.Tampered("extra")
        lib.WriteBytes(d, "stages/notes.txt", b"hello\n")
        self.assertFails(d, "extra file stages/notes.txt")
        d = self.Tampered("missing")
        os.remove(os.path.join(d, "lineage.jsonl"))
        self.assertFails(d, "missing file lineage.jsonl")
        d = self.Tampered("no-weights")
        os.remove(os.path.join(d, "final/weights.safetensors"))
        self.assertFails(d, "missing file final/weights.safetensors")

    # ---- consistent forgeries: the manifest, its root digest and the weights rewritten ----

    def testForgedFinalWeights(self):
        # The final weights replaced by checkpoint 16's parameters, final.params_root updated.
        d = self.Tampered("final")
        _, t = cb.read_safetensors(lib.ReadBytes(d, "checkpoints/step-00000016.safetensors"), "c")
        params = {n: t[n] for n in ("b1", "b2", "w1", "w2")}
        meta, _ = cb.read_safetensors(lib.ReadBytes(d, "final/weights.safetensors"), "f")
        lib.WriteBytes(d, "final/weights.safetensors", cb.write_safetensors(meta, params))
        m = lib.Manifest(d)
        views = {n: v[:1] + v[2:] for n, v in params.items()}  # (dtype, shape, bytes)
        m["final"]["params_root"] = cb.state_root(views).hex()
        lib.Reseal(d, m)
        self.assertFails(d, "are not the last step record's roots")
        self.assertVerifyFails(d, "final params_root or optimizer_root differs from the roots in the record of step 23")

    def testForgedReadableCopies(self):
        for field, value, message, verify_message in (
                ("accuracy", 0.99, "accuracy 0.99 is not the value",
                 'field "accuracy": expected the value of accuracy_bits'),
                ("eval_loss", 0.1, "loss 0.1 is not the value",
                 'eval: field "loss": expected the value of loss_bits'),
                ("learning_rate", 0.5, "learning_rate 0.5 is not",
                 'field "learning_rate": expected the value of learning_rate_bits'),
                ("epoch", 5, "line 25: epoch", "step 23: epoch recorded 5, replayed 7")):
            d = self.Tampered("readable")
            lines = lib.StepLines(d)
            r = json.loads(lines[-1])
            if field == "accuracy":
                r["eval"]["accuracy"] = value
            elif field == "eval_loss":
                r["eval"]["loss"] = value
            else:
                r[field] = value
            lines[-1] = cb.canonical_bytes(r)
            lib.WriteStepLines(d, lines)
            lib.Reseal(d)
            self.assertFails(d, message)
            self.assertVerifyFails(d, verify_message)

    def testAnAlteredRecordBreaksTheChain(self):
        d = self.Tampered("loss")
        lines = lib.StepLines(d)
        r = json.loads(lines[5])
        bits = "%08x" % (int(r["loss_bits"], 16) + 1)
        r["loss_bits"], r["loss"] = bits, cb.f32_of_bits(bits)
        lines[5] = cb.canonical_bytes(r)
        lib.WriteStepLines(d, lines)
        lib.Reseal(d)
        self.assertFails(d, "steps.jsonl line 6: the hash does not chain")
        self.assertVerifyFails(d, "step 4: its hash does not chain")  # line 6

    def testReorderedRecords(self):
        d = self.Tampered("reorder")
        lines = lib.StepLines(d)
        lines[3], lines[4] = lines[4], lines[3]
        lib.WriteStepLines(d, lines)
        lib.Reseal(d)
        self.assertFails(d, "the record of step 3, expected 2")

    def testACompleteRunCutBackToACheckpoint(self):
        # 16 of 24 steps kept, everything rewritten to agree (the lineage of a 16-step run).
        d = self.Tampered("cut")
        lines = lib.StepLines(d)[:17]
        lib.WriteStepLines(d, lines)
        last = json.loads(lines[-1])
        m = lib.Manifest(d)
        params = [p["name"] for p in m["config"]["params"]]
        lib.WriteBytes(d, "lineage.jsonl", cb.expected_lineage(m["config"]["train"], params, 16, 3))
        _, t = cb.read_safetensors(lib.ReadBytes(d, "checkpoints/step-00000016.safetensors"), "c")
        meta, _ = cb.read_safetensors(lib.ReadBytes(d, "final/weights.safetensors"), "f")
        lib.WriteBytes(d, "final/weights.safetensors",
                       cb.write_safetensors(meta, {n: t[n] for n in params}))
        m["steps"]["count"] = m["final"]["steps_done"] = 16
        m["final"].update(step_hash=last["hash"], params_root=last["roots"]["params"],
                          optimizer_root=last["roots"]["optimizer"])
        lib.Reseal(d, m)
        self.assertFails(d, "status complete, but 16 of the run's 24 steps are recorded")
        self.assertVerifyFails(d, "says the run is complete, but steps.jsonl holds 16 of its 24 steps")
        # Relabelled "stopped" (with the lineage of 17 steps begun), only replay can tell: step
        # 16's loss is finite.
        m = lib.Manifest(d)
        m["status"], m["stop"] = "stopped", {"reason": "step 16: loss is NaN"}
        lib.WriteBytes(d, "lineage.jsonl", cb.expected_lineage(m["config"]["train"], params, 17, 3))
        lib.Reseal(d, m)
        self.assertPasses(d)
        self.assertVerifyFails(d, "step 16: the bundle says the run stopped on a non-finite loss "
                               "here, but the replayed loss is finite")

    def testAForgedStopReason(self):
        d = self.Tampered("reason", self.stopped)
        m = lib.Manifest(d)
        m["stop"]["reason"] = "step 0: loss is NaN"
        lib.Reseal(d, m)
        self.assertFails(d, "stop.reason does not name step 1")
        m["stop"]["reason"] = "step 1: loss is +Inf"
        lib.Reseal(d, m)
        self.assertPasses(d)  # only replay recomputes the reason
        self.assertVerifyFails(d, 'manifest.json\'s stop reason is "step 1: loss is +Inf"')

    def testAMissingCheckpoint(self):
        d = self.Tampered("no-checkpoint")
        rel = "checkpoints/step-00000008.safetensors"
        os.remove(os.path.join(d, rel))
        m = lib.Manifest(d)
        m["files"] = [f for f in m["files"] if f["path"] != rel]
        m["checkpoints"] = [c for c in m["checkpoints"] if c["path"] != rel]
        lib.Reseal(d, m)
        self.assertFails(d, rel + ": missing (the schedule writes a checkpoint every 8 steps)")

    def testACheckpointAfterTheLastStep(self):
        # The writer never writes one (the final weights take its place); this one holds
        # checkpoint 16's tensors under the metadata of step 23.
        d = self.Tampered("checkpoint-24")
        rel = "checkpoints/step-00000024.safetensors"
        last = json.loads(lib.StepLines(d)[-1])
        _, t = cb.read_safetensors(lib.ReadBytes(d, "checkpoints/step-00000016.safetensors"), "c")
        meta = {"detrain.format": "detrain.checkpoint.v1", "detrain.steps_done": "24",
                "detrain.step_hash": last["hash"], "detrain.params_root": last["roots"]["params"],
                "detrain.optimizer_root": last["roots"]["optimizer"]}
        lib.WriteBytes(d, rel, cb.write_safetensors(meta, t))
        m = lib.Manifest(d)
        m["files"].append({"path": rel, "size": 0, "merkle_root": "0" * 64})
        m["files"].sort(key=lambda f: f["path"].encode("utf-8"))
        m["checkpoints"].append({"path": rel, "steps_done": 24})
        lib.Reseal(d, m)
        self.assertFails(d, rel + ": not a checkpoint this run's schedule writes")
        # detrain verify accepts only the checkpoints the schedule writes (integrity).
        self.assertVerifyFails(d, rel + ": not a checkpoint the schedule writes")

    def testAForgedCheckpointTensor(self):
        d = self.Tampered("checkpoint")
        rel = "checkpoints/step-00000008.safetensors"
        meta, t = cb.read_safetensors(lib.ReadBytes(d, rel), rel)
        dtype, st, shape, data = t["w1_s1"]
        t["w1_s1"] = (dtype, st, shape, bytes([data[0] ^ 1]) + data[1:])
        lib.WriteBytes(d, rel, cb.write_safetensors(meta, t))
        lib.Reseal(d)
        self.assertFails(d, rel + ": its tensors are not the state step 7's record names")
        self.assertVerifyFails(d, rel + ": its tensors are not the state step 7's record names")

    def testAForgedLineageKey(self):
        d = self.Tampered("lineage")
        text = lib.ReadBytes(d, "lineage.jsonl").split(b"\n")
        i = next(i for i in range(20, len(text)) if b'"type":"node"' in text[i])
        node = json.loads(text[i])
        node["key"][1] ^= 1
        text[i] = cb.canonical_bytes(node)
        lib.WriteBytes(d, "lineage.jsonl", b"\n".join(text))
        lib.Reseal(d)
        self.assertFails(d, "lineage.jsonl line %d differs" % (i + 1))
        self.assertVerifyFails(d, "lineage.jsonl")

    def testAForgedStepKey(self):
        d = self.Tampered("key")
        lines = lib.StepLines(d)
        r = json.loads(lines[1])
        r["key"][0] ^= 1
        lines[1] = cb.canonical_bytes(r)
        lib.WriteStepLines(d, lines)
        lib.Reseal(d)
        self.assertFails(d, "the step key is not fold_in(fold_in(key(seed), 2), t)")

    def testASplitThatIsNotDisjoint(self):
        d = self.Tampered("split")
        rel = "data/split.safetensors"
        meta, t = cb.read_safetensors(lib.ReadBytes(d, rel), rel)
        dtype, st, shape, train = t["train_index"]
        val = t["validation_index"][3]
        train = val[:8] + train[8:]  # the first training row is also a validation row
        t["train_index"] = (dtype, st, shape, train)
        lib.WriteBytes(d, rel, cb.write_safetensors(meta, t))
        data = json.loads(lib.ReadBytes(d, "data/data.json"))
        data["split"]["train_index_sha256"] = cb.tensor_digest("train_index", "s64", shape,
                                                               train).hex()
        lib.WriteBytes(d, "data/data.json", cb.canonical_bytes(data) + b"\n")
        lib.Reseal(d)
        self.assertFails(d, "are not disjoint")
        self.assertVerifyFails(d, "the split is not disjoint")

    def testAForgedInformationalField(self):
        # verify rebuilds the whole manifest (but files[] and root_digest) from the recompiled
        # run and names the first top-level field that differs.
        for edit, message, field in (
                (lambda m: m["program"].update(sha256="0" * 64), "program.sha256 is not",
                 "program"),
                (lambda m: m["data"]["files"][0].update(sha256="1" * 64), "data files differ",
                 "data"),
                (lambda m: m["config"]["optimizer"].update(b1=0.5), "config differs from stage 1",
                 "config"),
                (lambda m: m["stages"][1]["transform"].update(name="x"), "stage source: number",
                 "stages"),
                (lambda m: m["stages"][7]["transform"].pop("passes"),
                 "stage eval-plan: pipeline and passes missing", "stages"),
                (lambda m: m["run"].update(state_digest="sha256"),
                 "run.json differs from manifest.json's run", "run"),
                (lambda m: m.update(checkpoints=[]), "checkpoints[] is not the checkpoint",
                 "checkpoints")):
            d = self.Tampered("field")
            m = lib.Manifest(d)
            edit(m)
            lib.Reseal(d, m)
            self.assertFails(d, message)
            self.assertVerifyFails(d, 'manifest.json: "%s' % field)

    def testAnEditedStaticFile(self):
        # Every file the run writes at its start is rebuilt by verify's recompile phase.
        for rel, message in (("stages/passes/04.cse.hlo", "not the output the stage chain "
                              "records for pass 4"),
                             ("stages/04.plan.txt", None)):
            d = self.Tampered("static")
            lib.WriteBytes(d, rel, lib.ReadBytes(d, rel) + b"\n")
            lib.Reseal(d)
            if message:
                self.assertFails(d, message)
            else:
                self.assertIn("04.plan.txt against 04.plan.pb", self.assertPasses(d))
            self.assertVerifyFails(d, rel + " differs from what recompiling the program gives")

    # ---- a CUDA run's executable (its shape: a real one needs the CUDA toolkit) ----

    def testACudaShapedBundlePasses(self):
        d = lib.MakeCudaShaped(self.Tampered("cuda"))
        out = self.assertPasses(d)
        self.assertIn("ok  CUDA executable: 8 stages (source, PTX, cubins)", out)
        self.assertIn("not checked: the CUDA source against the plan", out)
        # detrain verify generates the source again: the placeholder is not it.
        self.assertVerifyFails(d, "stages/04.cuda.cu: stage 4 (cuda) differs")

    def testATamperedCudaExecutable(self):
        def Edited(name, edit):
            d = lib.MakeCudaShaped(self.Tampered(name))
            m = lib.Manifest(d)
            edit(d, m)
            lib.Reseal(d, m)
            return d

        def Flip(d, m):
            lib.WriteBytes(d, "stages/04.ptx.ptx", lib.ReadBytes(d, "stages/04.ptx.ptx") + b"x")

        def Unlisted(d, m):
            m["executables"]["cuda"].pop()
            os.remove(os.path.join(d, "stages/04.eval-cubin-sm_90.cubin"))
            m["files"] = [f for f in m["files"] if f["path"] != "stages/04.eval-cubin-sm_90.cubin"]

        def Extra(d, m):
            lib.WriteBytes(d, "stages/04.cubin-sm_75.cubin", b"x")
            lib.AddFile(m, "stages/04.cubin-sm_75.cubin")

        for name, edit, message in (
                ("flip", Flip, "executables.cuda stage ptx: stages/04.ptx.ptx has another SHA-256"),
                ("link", lambda d, m: m["executables"]["cuda"][2]["transform"].update(
                    input_sha256="0" * 64), "stage cubin-sm_80: its input ptx is not the stage"),
                ("arch", lambda d, m: m["executables"]["cuda"][3]["transform"]["options"].update(
                    arch="sm_80"), "stage cubin-sm_90: options are not {arch: sm_90"),
                ("version", lambda d, m: m["executables"]["cuda"][6]["transform"]["options"].update(
                    nvjitlink="12.9"), "nvjitlink 12.9, but another stage records 13.0"),
                ("order", lambda d, m: m["executables"]["cuda"].reverse(),
                 "executables.cuda has the stages"),
                ("unlisted", Unlisted, "executables.cuda has the stages"),
                ("extra", Extra, "stages/: files ['stages/04.cubin-sm_75.cubin'] are not"),
                ("backend", lambda d, m: m["run"].update(backend="cpu"), "manifest.json: fields"),
                ("no-executables", lambda d, m: m.pop("executables"), "manifest.json: fields")):
            self.assertFails(Edited(name, edit), message)

    def testAFileEntryWithAFlatSha256(self):
        # Format 1's file entries hold size and Merkle root only: the Merkle root is the digest.
        d = self.Tampered("sha")
        m = lib.Manifest(d)
        m["files"][0]["sha256"] = cb.sha256(lib.ReadBytes(d, m["files"][0]["path"])).hex()
        lib.Reseal(d, m)
        self.assertFails(d, m["files"][0]["path"] + ": fields ['merkle_root', 'path', 'sha256', "
                         "'size'], expected merkle_root, path, size")


class PrimitivesTest(unittest.TestCase):
    """Known answers from the format documents, so the checker's primitives are checked even
    without the detrain binary."""

    def testCanonicalJson(self):
        value = {"b": [1, 2.5, 1e-8, 1e21, -0.0, 123.0], "a": "\u0001/"}
        self.assertEqual(cb.canonical_json(value), '{"a":"\\u0001/","b":[1,2.5,1e-8,1e+21,0,123]}')
        for x, s in ((0.1, "0.1"), (1e-7, "1e-7"), (1.5e-6, "0.0000015"),
                     (2.0 ** 60, "1152921504606847000")):
            self.assertEqual(cb.js_number(x), s)

    def testMerkle(self):
        self.assertEqual(cb.merkle_root(b""), cb.sha256(b""))
        self.assertEqual(cb.merkle_root(b"a"), cb.sha256(b"\x00a"))
        big = b"x" * cb.MERKLE_CHUNK + b"y"
        self.assertEqual(cb.merkle_root(big),
                         cb.sha256(b"\x01" + cb.sha256(b"\x00" + b"x" * cb.MERKLE_CHUNK) +
                                   cb.sha256(b"\x00y")))

    def testTensorDigestKnownAnswer(self):  # schemas/tensor-digest.md
        import struct
        data = struct.pack("<4f", 1.0, -2.5, float("nan"), 0.0)
        self.assertEqual(cb.tensor_digest("w", "f32", [2, 2], data).hex(),
                         "cb93e8c95e4bb8ea21ca1ed7c47b1c3b8db3f934fb875f5a6d689c0e15d1c015")

    def testThreefryKnownAnswer(self):  # schemas/key-lineage.md §5
        self.assertEqual(cb.threefry([0x13198A2E, 0x03707344], 0x243F6A88, 0x85A308D3),
                         [0xC4923A9C, 0x483DF7A0])


if __name__ == "__main__":
    unittest.main()
