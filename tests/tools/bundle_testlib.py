"""Shared by the bundle tool tests: finds the detrain binary (DETRAIN_BINARY, set by CTest, or
build/src/cli/detrain), makes real bundles from the tiny test program, and "reseals" a bundle
after an edit the way a forger without a signing key can (every files[] entry, the root digest
and the final weights' metadata recomputed), using tools/check_bundle.py's own primitives."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.environ.get("DETRAIN_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_bundle as cb  # noqa: E402

TINY = os.path.join(ROOT, "tests", "evidence", "testdata", "tiny")
CHECKER = os.path.join(ROOT, "tools", "check_bundle.py")


def Binary():
    path = os.environ.get("DETRAIN_BINARY") or os.path.join(ROOT, "build", "src", "cli", "detrain")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def Detrain(*args, check=True):
    p = subprocess.run([Binary(), *args], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("detrain %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p


class Bundles:
    """Real bundles in a temporary directory, made once per test class."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="bundle_test.")

    def Close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def Path(self, name):
        return os.path.join(self.tmp, name)

    def Run(self, name, *flags, program=os.path.join(TINY, "train.dt")):
        out = self.Path(name)
        Detrain("run", program, "--attest", "-q", "-o", out, *flags)
        return out

    def Stopped(self, name):
        """A run that a NaN loss stops after its first step (sgd with learning rate 1e30)."""
        prog = self.Path(name + "-program")
        os.makedirs(prog)
        shutil.copy(os.path.join(TINY, "tiny.csv"), prog)
        with open(os.path.join(TINY, "train.dt")) as f:
            text = f.read().replace("adam(learning_rate = 1e-2)", "sgd(learning_rate = 1e30)")
        with open(os.path.join(prog, "train.dt"), "w") as f:
            f.write(text)
        out = self.Path(name)
        p = Detrain("run", os.path.join(prog, "train.dt"), "--attest", "-q", "-o", out,
                    check=False)
        assert p.returncode == 1, p.stderr  # 1: stopped on a non-finite loss
        return out

    def Interrupted(self, name):
        """A run stopped by SIGINT after its first checkpoint: an incomplete bundle."""
        out = self.Path(name)
        p = subprocess.Popen([Binary(), "run", os.path.join(TINY, "train.dt"), "--attest", "-q",
                              "--steps", "100000", "-o", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        progress = os.path.join(out, "progress.json")
        while time.time() < deadline and p.poll() is None:
            try:
                with open(progress) as f:
                    if json.load(f)["steps_done"] >= 8:
                        break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)
        return out

    def Copy(self, src, name):
        dst = self.Path(name)
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        return dst


def ReadBytes(bundle, rel):
    with open(os.path.join(bundle, rel), "rb") as f:
        return f.read()


def WriteBytes(bundle, rel, data):
    with open(os.path.join(bundle, rel), "wb") as f:
        f.write(data)


def Manifest(bundle):
    return json.loads(ReadBytes(bundle, "manifest.json"))


def Reseal(bundle, manifest=None):
    """Recomputes what a forger can: files[], the root digest, the final weights' metadata."""
    m = manifest if manifest is not None else Manifest(bundle)
    for f in m["files"]:
        data = ReadBytes(bundle, f["path"])
        f["size"] = len(data)
        f["merkle_root"] = cb.merkle_root(data).hex()
    body = {k: v for k, v in m.items() if k != "root_digest"}
    m["root_digest"] = hashlib.sha256(cb.canonical_bytes(body)).hexdigest()
    WriteBytes(bundle, "manifest.json", cb.canonical_bytes(m) + b"\n")
    meta, tensors = cb.read_safetensors(ReadBytes(bundle, "final/weights.safetensors"), "final")
    meta.update({"detrain.bundle_root": m["root_digest"],
                 "detrain.params_root": m["final"]["params_root"],
                 "detrain.final_step_hash": m["final"]["step_hash"],
                 "detrain.steps_done": str(m["final"]["steps_done"])})
    WriteBytes(bundle, "final/weights.safetensors", cb.write_safetensors(meta, tensors))


def StepLines(bundle):
    return ReadBytes(bundle, "steps.jsonl").split(b"\n")[:-1]


def WriteStepLines(bundle, lines):
    WriteBytes(bundle, "steps.jsonl", b"\n".join(lines) + b"\n")


def AddFile(manifest, rel):
    """Lists a new file in manifest["files"] (its digest is filled in by Reseal)."""
    manifest["files"].append({"path": rel, "size": 0, "merkle_root": "0" * 64})
    manifest["files"].sort(key=lambda f: f["path"].encode("utf-8"))


def MakeCudaShaped(bundle):
    """Turns a CPU bundle into the shape of a CUDA run's (schemas/bundle.md 4.3): run.backend
    "cuda" and an executables section whose stage files hold placeholder text, each record's
    digest, size and links correct — what tools/check_bundle.py can check. Not a real CUDA run's
    bundle (`detrain verify` regenerates the source and rejects it); the real one is checked in
    tests/evidence/cuda_bundle_test.cc, which needs the CUDA toolkit."""
    m = Manifest(bundle)
    digest = {s["stage"]: s["sha256"] for s in m["stages"]}
    plans = [("", "plan")] + ([("eval-", "eval-plan")] if "eval-plan" in digest else [])
    records = []
    for prefix, plan in plans:
        for name, file, transform, source in cb.cuda_stages(prefix, plan):
            data = ("// %s: placeholder of the %s output\n" % (name, transform)).encode("utf-8")
            WriteBytes(bundle, "stages/" + file, data)
            AddFile(m, "stages/" + file)
            if transform == "cuda-codegen":
                options = {"format_version": 1}
            elif transform == "nvrtc":
                options = {"arch": cb.PTX_ARCH, "nvrtc": "13.0", "options": ["--fmad=false"]}
            else:
                arch = name.rsplit("cubin-", 1)[1]
                options = {"arch": arch, "nvjitlink": "13.0", "options": ["-arch=" + arch]}
            records.append({"stage": name, "number": 4, "file": file, "size": len(data),
                            "sha256": hashlib.sha256(data).hexdigest(),
                            "transform": {"name": transform, "options": options,
                                          "input_stage": source, "input_sha256": digest[source]}})
            digest[name] = records[-1]["sha256"]
    m["executables"] = {"cuda": records}
    m["run"]["backend"] = "cuda"
    WriteBytes(bundle, "run.json", cb.canonical_bytes(m["run"]) + b"\n")
    Reseal(bundle, m)
    return bundle
