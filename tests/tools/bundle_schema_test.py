#!/usr/bin/env python3
"""Validates real bundles against schemas/bundle.schema.json (JSON Schema draft 2020-12):
manifest.json, run.json, data/data.json, environment.json, every line of steps.jsonl (header and
records, for both step-digest policies), progress.json of an interrupted run, and the reports of
`detrain verify --json` for each outcome. Also checks that the schema rejects what the format
forbids (a schema that accepts everything would pass the first half). Needs the detrain binary
(DETRAIN_BINARY, which CTest sets) and the `jsonschema` module (tools/setup.sh installs
python3-jsonschema); skipped without either."""
import copy
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle_testlib as lib  # noqa: E402

try:
    import jsonschema
except ImportError:
    jsonschema = None

SCHEMA_PATH = os.path.join(lib.ROOT, "schemas", "bundle.schema.json")


def Load(bundle, rel):
    return json.loads(lib.ReadBytes(bundle, rel))


@unittest.skipUnless(jsonschema, "needs the jsonschema module (python3-jsonschema)")
class SchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(SCHEMA_PATH) as f:
            cls.schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(cls.schema)

    def Errors(self, definition, document):
        schema = self.schema if definition is None else {
            "$schema": self.schema["$schema"], "$defs": self.schema["$defs"],
            "$ref": "#/$defs/" + definition}
        return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(document)]

    def assertValid(self, definition, document, where=""):
        errors = self.Errors(definition, document)
        self.assertEqual(errors, [], "%s %s" % (definition or "manifest", where))

    def assertInvalid(self, definition, document, why):
        self.assertNotEqual(self.Errors(definition, document), [], why)


class SchemaFileTest(SchemaTest):
    def testTheSchemaIsAValidDraft202012Schema(self):
        jsonschema.Draft202012Validator.check_schema(self.schema)  # also in setUpClass
        self.assertEqual(self.schema["properties"]["format_version"], {"const": 1})


@unittest.skipUnless(lib.Binary(), "needs the detrain binary (DETRAIN_BINARY)")
class BundleSchemaTest(SchemaTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.b = lib.Bundles()
        cls.bundles = {"embedded": cls.b.Run("embedded", "--embed-data"),
                       "sha256": cls.b.Run("sha256", "--step-digest", "sha256"),
                       "stopped": cls.b.Stopped("stopped")}

    @classmethod
    def tearDownClass(cls):
        cls.b.Close()

    def assertBundleValid(self, d):
        if os.path.exists(os.path.join(d, "manifest.json")):
            self.assertValid(None, Load(d, "manifest.json"), d)
            self.assertValid("environment", Load(d, "environment.json"), d)
        else:
            self.assertValid("progress", Load(d, "progress.json"), d)
        self.assertValid("run", Load(d, "run.json"), d)
        self.assertValid("dataRecord", Load(d, "data/data.json"), d)
        lines = lib.StepLines(d)
        header = json.loads(lines[0])
        self.assertValid("stepsHeader", header, d)
        record = "stepRecordXxh3" if header["state_digest"] != "sha256" else "stepRecordSha256"
        for i, line in enumerate(lines[1:]):
            self.assertValid(record, json.loads(line), "%s steps.jsonl line %d" % (d, i + 2))

    def testRealBundlesAreValid(self):
        for d in self.bundles.values():
            self.assertBundleValid(d)
        self.assertEqual(Load(self.bundles["stopped"], "manifest.json")["status"], "stopped")

    def testAnInterruptedBundleIsValid(self):
        d = self.b.Interrupted("interrupted")
        self.assertFalse(os.path.exists(os.path.join(d, "manifest.json")))
        self.assertBundleValid(d)
        p = lib.Detrain("verify", "--json", d, check=False)
        self.assertEqual(p.returncode, 1)
        report = json.loads(p.stdout)
        self.assertEqual(report["outcome"], "incomplete")
        self.assertValid("verifyReport", report)

    def testVerifyReportsAreValid(self):
        d = self.bundles["embedded"]
        tampered = self.b.Copy(d, "tampered")
        lib.WriteBytes(tampered, "run.json", b"{}\n")
        for bundle, outcome, code in ((d, "verified", 0), (tampered, "failed", 1),
                                      (self.b.Path("absent"), "input-error", 2)):
            p = lib.Detrain("verify", "--json", bundle, check=False)
            self.assertEqual(p.returncode, code, p.stderr)
            report = json.loads(p.stdout)
            self.assertEqual(report["outcome"], outcome)
            self.assertValid("verifyReport", report, outcome)
        # The schema ties exit codes to outcomes.
        report["exit_code"] = 0
        self.assertInvalid("verifyReport", report, "input-error with exit code 0")

    def testASignedBundlesReportIsValid(self):
        key = self.b.Path("key")
        lib.Detrain("keygen", "-o", key)
        signed = self.b.Copy(self.bundles["embedded"], "signed")
        lib.Detrain("verify", signed, "--no-replay", "--sign-key", key + ".key")
        p = lib.Detrain("verify", "--json", "--no-replay", "--trusted-key", key + ".pub", signed)
        report = json.loads(p.stdout)
        self.assertEqual([ph["phase"] for ph in report["phases"]],
                         ["integrity", "signatures", "recompile"])
        self.assertEqual(len(report["attestations"]), 1)
        self.assertValid("verifyReport", report, "signed")
        report["attestations"][0]["signer"] = "not hex"
        self.assertInvalid("verifyReport", report, "a signer that is no key id")

    def testTheSchemaRejectsWhatTheFormatForbids(self):
        m = Load(self.bundles["embedded"], "manifest.json")
        cases = {
            "an uppercase digest": lambda m: m.update(root_digest=m["root_digest"].upper()),
            "a short digest": lambda m: m["final"].update(step_hash="ab"),
            "status incomplete": lambda m: m.update(status="incomplete"),
            "stopped without stop": lambda m: m.update(status="stopped"),
            "stop in a complete bundle": lambda m: m.update(stop={"reason": "x"}),
            "an unknown field": lambda m: m.update(signed_by="me"),
            "a missing field": lambda m: m.pop("lineage"),
            "format version 2": lambda m: m.update(format_version=2),
            "a path leaving the bundle": lambda m: m["files"][0].update(path="../etc/passwd"),
            "an absolute path": lambda m: m["files"][0].update(path="/etc/passwd"),
            "a dot component": lambda m: m["files"][0].update(path="stages/./02.hlo.hlo"),
            "an unknown kind of file": lambda m: m["files"][0].update(path="notes.txt"),
            "the manifest listing itself": lambda m: m["files"][0].update(path="manifest.json"),
            "a negative size": lambda m: m["files"][0].update(size=-1),
            "an extra field in a file entry": lambda m: m["files"][0].update(mode=420),
            "a flat SHA-256 in a file entry": lambda m: m["files"][0].update(sha256="0" * 64),
            "a file entry without its Merkle root": lambda m: m["files"][0].pop("merkle_root"),
            "an eval-plan without its passes": lambda m: m["stages"][7]["transform"].pop("passes"),
            "a plan with passes": lambda m: m["stages"][6]["transform"].update(
                passes=m["stages"][5]["transform"]["passes"]),
            "a checkpoint name": lambda m: m["checkpoints"][0].update(path="checkpoints/x"),
            "a program outside program/": lambda m: m["program"].update(path="train.dt"),
            "a stage's transform name": lambda m: m["stages"][2]["transform"].update(name="x"),
            "stage 0 with a transform": lambda m: m["stages"][0].update(
                transform=m["stages"][1]["transform"]),
            "an unknown optimizer": lambda m: m["config"]["optimizer"].update(name="lion"),
            "a run on another backend": lambda m: m["run"].update(backend="tpu"),
        }
        for why, edit in cases.items():
            bad = copy.deepcopy(m)
            edit(bad)
            self.assertInvalid(None, bad, why)

    def testACudaRunsManifestIsValid(self):
        d = lib.MakeCudaShaped(self.b.Copy(self.bundles["embedded"], "cuda"))
        m = Load(d, "manifest.json")
        self.assertValid(None, m, "cuda-shaped")
        self.assertValid("run", Load(d, "run.json"), "cuda-shaped")
        cases = {
            "cuda without executables": lambda m: m.pop("executables"),
            "executables of a cpu run": lambda m: m["run"].update(backend="cpu"),
            "a chain stage among them": lambda m: m["executables"]["cuda"].append(m["stages"][6]),
            "another backend's": lambda m: m["executables"].update(tpu=[]),
            "PTX without the NVRTC version": lambda m: m["executables"]["cuda"][1][
                "transform"]["options"].pop("nvrtc"),
            "a cubin from nvrtc": lambda m: m["executables"]["cuda"][2]["transform"].update(
                name="nvrtc"),
            "a source read from the PTX": lambda m: m["executables"]["cuda"][0][
                "transform"].update(input_stage="ptx"),
            "too many stages": lambda m: m["executables"].update(
                cuda=m["executables"]["cuda"] * 9),
        }
        for why, edit in cases.items():
            bad = copy.deepcopy(m)
            edit(bad)
            self.assertInvalid(None, bad, why)

    def testTheStepRecordSchemaMatchesThePolicy(self):
        xxh3 = json.loads(lib.StepLines(self.bundles["embedded"])[1])
        sha = json.loads(lib.StepLines(self.bundles["sha256"])[1])
        self.assertInvalid("stepRecordXxh3", sha, "a SHA-256 record under xxh3-128")
        self.assertInvalid("stepRecordSha256", xxh3, "an XXH3 record under sha256")
        for why, edit in {"a key word above 2^32": lambda r: r["key"].__setitem__(0, 2 ** 32),
                          "three key words": lambda r: r["key"].append(0),
                          "bits of 7 digits": lambda r: r.update(loss_bits="3f25e77"),
                          "an accuracy without its bits": lambda r: r.update(
                              eval={"loss": 1.0, "loss_bits": "3f800000", "accuracy": 0.5}),
                          "roots without optimizer": lambda r: r.update(
                              roots={"params": "0" * 64})}.items():
            bad = copy.deepcopy(xxh3)
            edit(bad)
            self.assertInvalid("stepRecordXxh3", bad, why)


if __name__ == "__main__":
    unittest.main()
