#!/usr/bin/env python3
"""Signed evidence and archival as a user runs them (schemas/attestation.md, issue 17):

- `detrain keygen`, `run --attest --sign-key`, `verify --trusted-key` (and its rejections: wrong
  key, edited payload, edited weights, another bundle's statement, a replayed old summary),
  `verify --sign-key` writing a verification summary;
- standard verifiers that detrain's authors did not write accept the outputs: the OpenSSF
  `model_signing verify key` CLI on final/ with attestation/model.sig, and securesystemslib's
  DSSE verifier on every envelope — from the virtual environment tools/setup-verifiers.sh makes
  (skipped, saying so, where it is absent);
- `pack` twice gives the same bytes; `verify` and `inspect` read the archive; `unpack` restores
  it and refuses a hostile one.

Needs the detrain binary (DETRAIN_BINARY)."""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

ROOT = os.environ.get("DETRAIN_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BINARY = os.environ.get("DETRAIN_BINARY", os.path.join(ROOT, "build", "src", "cli", "detrain"))
VENV_PYTHON = os.path.join(ROOT, ".venv-verifiers", "bin", "python")
STANDARD = os.path.join(ROOT, "tests", "evidence", "standard_verifiers.py")
PROGRAM = os.path.join(ROOT, "examples", "breast_cancer", "train.dt")


def Run(args, code=0):
    p = subprocess.run([BINARY] + args, capture_output=True, text=True, timeout=600)
    if p.returncode != code:
        raise AssertionError("detrain %s exited %d, expected %d:\n%s%s" %
                             (" ".join(args), p.returncode, code, p.stdout, p.stderr))
    return p


def Sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Signing(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="detrain_signing_")
        cls.alice = os.path.join(cls.tmp, "alice")
        cls.bob = os.path.join(cls.tmp, "bob")
        out = Run(["keygen", "-o", cls.alice]).stdout
        assert "key id:" in out, out
        Run(["keygen", "-o", cls.bob])
        cls.bundle = os.path.join(cls.tmp, "bundle")
        Run(["run", PROGRAM, "--attest", "-o", cls.bundle, "--sign-key", cls.alice + ".key",
             "--steps", "30", "-q"])
        cls.other = os.path.join(cls.tmp, "other")
        Run(["run", PROGRAM, "--attest", "-o", cls.other, "--sign-key", cls.alice + ".key",
             "--steps", "20", "-q"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def Copy(self, name):
        path = os.path.join(self.tmp, name)
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(self.bundle, path)
        return path

    def test_keygen(self):
        self.assertEqual(os.stat(self.alice + ".key").st_mode & 0o777, 0o600)
        with open(self.alice + ".pub") as f:
            self.assertTrue(f.read().startswith("-----BEGIN PUBLIC KEY-----\n"))
        p = Run(["keygen", "-o", self.alice], code=2)
        self.assertIn("never replaces a key", p.stderr)

    def test_sign_key_errors(self):
        p = Run(["run", PROGRAM, "--sign-key", self.alice + ".key", "-q"], code=2)
        self.assertIn("--sign-key needs --attest", p.stderr)
        out = os.path.join(self.tmp, "never")
        p = Run(["run", PROGRAM, "--attest", "-o", out, "--sign-key", self.alice + ".pub"], code=2)
        self.assertIn("not an unencrypted PEM private key", p.stderr)
        self.assertFalse(os.path.exists(out), "nothing is written when the key is wrong")
        p = Run(["verify", self.bundle, "--trusted-key", "/dev/zero"], code=2)
        self.assertIn("not a regular file", p.stderr)

    def test_verify_with_trusted_key(self):
        p = Run(["verify", self.bundle, "--trusted-key", self.alice + ".pub", "--json"])
        report = json.loads(p.stdout)
        self.assertEqual(report["outcome"], "verified")
        self.assertEqual([a["file"] for a in report["attestations"]],
                         ["attestation/model.sig", "attestation/provenance.intoto.json",
                          "attestation/training.intoto.json"])
        self.assertIn("signatures", [ph["phase"] for ph in report["phases"]])
        p = Run(["verify", self.bundle, "--trusted-key", self.bob + ".pub", "--no-replay"], code=1)
        self.assertIn("no trusted key (--trusted-key) verifies its signature", p.stderr)

    def test_rejections(self):
        # Edited payload: another seed in the provenance, the old signature kept.
        b = self.Copy("edited_payload")
        path = os.path.join(b, "attestation", "provenance.intoto.json")
        with open(path) as f:
            env = json.load(f)
        payload = base64.b64decode(env["payload"]).replace(b'"seed":', b'"seed":1', 1)
        env["payload"] = base64.b64encode(payload).decode()
        with open(path, "w") as f:
            json.dump(env, f)
        p = Run(["verify", b, "--trusted-key", self.alice + ".pub", "--no-replay"], code=1)
        self.assertIn("does not verify under trusted key", p.stderr)
        # Edited weights: integrity catches them before any signature is read.
        b = self.Copy("edited_weights")
        w = os.path.join(b, "final", "weights.safetensors")
        with open(w, "r+b") as f:
            f.seek(-1, 2)
            last = f.read(1)
            f.seek(-1, 2)
            f.write(bytes([last[0] ^ 1]))
        p = Run(["verify", b, "--trusted-key", self.alice + ".pub", "--no-replay"], code=1)
        self.assertIn("weights.safetensors", p.stderr)
        # A valid signature over another bundle.
        b = self.Copy("another_bundle")
        shutil.copy(os.path.join(self.other, "attestation", "training.intoto.json"),
                    os.path.join(b, "attestation", "training.intoto.json"))
        p = Run(["verify", b, "--trusted-key", self.alice + ".pub", "--no-replay"], code=1)
        self.assertIn("is about another bundle", p.stderr)
        # A replayed old verification summary: the other bundle's, signed and valid there.
        Run(["verify", self.other, "--no-replay", "--trusted-key", self.alice + ".pub",
             "--sign-key", self.bob + ".key"])
        b = self.Copy("replayed_summary")
        summaries = [n for n in os.listdir(os.path.join(self.other, "attestation"))
                     if n.startswith("verification.")]
        self.assertEqual(len(summaries), 1)
        shutil.copy(os.path.join(self.other, "attestation", summaries[0]),
                    os.path.join(b, "attestation", summaries[0]))
        p = Run(["verify", b, "--trusted-key", self.alice + ".pub", "--trusted-key",
                 self.bob + ".pub", "--no-replay"], code=1)
        self.assertIn("a verification summary that is about another bundle", p.stderr)

    def test_verification_summary(self):
        b = self.Copy("summary")
        p = Run(["verify", b, "--trusted-key", self.alice + ".pub", "--sign-key",
                 self.bob + ".key"])
        self.assertIn("verification summary (PASSED", p.stderr)
        names = sorted(os.listdir(os.path.join(b, "attestation")))
        summary = [n for n in names if n.startswith("verification.")]
        self.assertEqual(len(summary), 1)
        with open(os.path.join(b, "attestation", summary[0])) as f:
            statement = json.loads(base64.b64decode(json.load(f)["payload"]))
        pred = statement["predicate"]
        self.assertEqual(statement["predicateType"], "https://slsa.dev/verification_summary/v1")
        self.assertEqual(pred["verificationResult"], "PASSED")
        with open(os.path.join(b, "manifest.json")) as f:
            root = json.load(f)["root_digest"]
        self.assertEqual(pred["resourceUri"], "detrain-bundle:sha256:" + root)
        self.assertEqual(pred["detrain_checks"]["replay"]["steps_replayed"], 30)
        # Which stages this detrain reproduced byte for byte (all of them: the bundle is its own).
        recompile = [c for c in pred["detrain_checks"]["phases"] if c["phase"] == "recompile"][0]
        self.assertIn("plan", recompile["stages_reproduced"])
        self.assertIn("opt-hlo", recompile["stages_reproduced"])
        self.assertEqual(recompile["stages_not_reproduced"], [])
        self.assertEqual(len(pred["inputAttestations"]), 3)
        self.assertEqual(pred["verifiedLevels"], ["SLSA_BUILD_LEVEL_1"])
        # Checked on the next verification; a key that is not trusted fails it.
        Run(["verify", b, "--no-replay", "--trusted-key", self.alice + ".pub", "--trusted-key",
             self.bob + ".pub"])
        p = Run(["verify", b, "--no-replay", "--trusted-key", self.alice + ".pub"], code=1)
        self.assertIn(summary[0], p.stderr)
        p = Run(["inspect", b])
        self.assertIn("https://slsa.dev/verification_summary/v1  PASSED", p.stdout)

    def test_standard_verifiers(self):
        if not os.path.exists(VENV_PYTHON):
            self.skipTest("no .venv-verifiers (tools/setup-verifiers.sh makes it): the standard "
                          "verifiers were not run")
        def Standard(bundle, key, *extra):
            return subprocess.run([VENV_PYTHON, STANDARD] + list(extra) + [bundle, key],
                                  capture_output=True, text=True, timeout=300)
        p = Standard(self.bundle, self.alice + ".pub")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("model.sig: verified by model_signing", p.stdout)
        self.assertIn("training.intoto.json: verified by securesystemslib", p.stdout)
        self.assertIn("provenance.intoto.json: verified by securesystemslib", p.stdout)
        # The same tools reject a wrong key and edited weights.
        p = Standard(self.bundle, self.bob + ".pub", "--expect-fail")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("model.sig: FAILED", p.stdout)
        b = self.Copy("standard_edited")
        with open(os.path.join(b, "final", "weights.safetensors"), "ab") as f:
            f.write(b"\0")
        p = Standard(b, self.alice + ".pub", "--expect-fail", "--only", "model.sig")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # A verification summary, signed by the verifier's key.
        b = self.Copy("standard_summary")
        Run(["verify", b, "--no-replay", "--sign-key", self.bob + ".key"])
        p = Standard(b, self.bob + ".pub", "--only", "verification.*")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("verification_summary/v1", p.stdout)

    def test_pack_verify_inspect_unpack(self):
        a = os.path.join(self.tmp, "a.tar")
        b = os.path.join(self.tmp, "b.tar")
        out = Run(["pack", self.bundle, "-o", a]).stdout
        Run(["pack", self.bundle, "-o", b])
        with open(a, "rb") as fa, open(b, "rb") as fb:
            self.assertEqual(fa.read(), fb.read(), "pack twice: the same bytes")
        self.assertIn("sha256: " + Sha256(a), out)
        # Python's tarfile reads it: only regular files, fixed metadata.
        with tarfile.open(a) as t:
            members = t.getmembers()
            self.assertTrue(all(m.isfile() and m.mtime == 0 and m.uid == 0 and m.mode == 0o644
                                for m in members))
            self.assertEqual([m.name for m in members], sorted(m.name for m in members))
        p = Run(["verify", a, "--trusted-key", self.alice + ".pub"])
        self.assertIn("verified:", p.stderr)
        p = Run(["inspect", a])
        self.assertIn("archive     sha256:" + Sha256(a), p.stdout)
        # A verification summary of the archive goes next to it and names the archive.
        p = Run(["verify", a, "--no-replay", "--sign-key", self.bob + ".key"])
        vsa = [n for n in os.listdir(self.tmp) if n.startswith("a.tar.") and
               n.endswith(".vsa.intoto.json")]
        self.assertEqual(len(vsa), 1, os.listdir(self.tmp))
        with open(os.path.join(self.tmp, vsa[0])) as f:
            statement = json.loads(base64.b64decode(json.load(f)["payload"]))
        self.assertIn({"name": "a.tar", "digest": {"sha256": Sha256(a)}}, statement["subject"])
        dest = os.path.join(self.tmp, "unpacked")
        Run(["unpack", a, "-o", dest])
        Run(["verify", dest, "--trusted-key", self.alice + ".pub", "--no-replay"])
        p = Run(["unpack", a, "-o", dest], code=2)
        self.assertIn("exists", p.stderr)

    def test_hostile_archives(self):
        def Archive(name, add):
            path = os.path.join(self.tmp, name)
            with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
                add(t)
            return path

        def AddFile(t, name, data=b"x"):
            import io
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))

        def AddLink(t, name, target, kind):
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = target
            t.addfile(info)

        cases = [
            ("dotdot.tar", lambda t: AddFile(t, "../evil"), "a '..' component"),
            ("abs.tar", lambda t: AddFile(t, "/tmp/evil"), "an absolute path"),
            ("symlink.tar", lambda t: AddLink(t, "final", "/etc", tarfile.SYMTYPE), "a link"),
            ("hardlink.tar", lambda t: AddLink(t, "x", "/etc/passwd", tarfile.LNKTYPE), "a link"),
        ]
        for name, add, want in cases:
            path = Archive(name, add)
            dest = os.path.join(self.tmp, "out_" + name)
            p = Run(["unpack", path, "-o", dest], code=2)
            self.assertIn(want, p.stderr, name)
            self.assertFalse(os.path.exists(dest), name)
            p = Run(["verify", path], code=2)
            self.assertIn(want, p.stderr, name)
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(self.tmp), "evil")))
        self.assertFalse(os.path.exists("/tmp/evil"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
