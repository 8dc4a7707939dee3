#!/usr/bin/env python3
"""An independent checker of a detrain audit bundle, format 1 (schemas/bundle.md).

This is a second implementation of the bundle format for an auditor to read and run: it
follows the format documents (schemas/bundle.md, merkle.md, tensor-digest.md, canonical-json.md,
key-lineage.md), shares no code with detrain, and uses only the Python standard library.
It checks everything that can be checked without re-running the training (bundle.md §6.2):

  - manifest.json: canonical JSON, format version, fields, its root digest, status vs. counts;
  - every file: listed exactly once, nothing missing or extra, its size and Merkle root (the
    manifest's file digest); each file's SHA-256 is computed here for the cross-checks;
  - the program and the stages: digests, sizes, the stage table, the chain's input links, the
    pass chains, each pass output file, and the manifest's configuration against stage 1's
    header; for a run on the CUDA backend its executable (manifest.json's "executables"): the
    CUDA source, PTX and cubin records, their files' digests, their links and options;
  - run.json, data/data.json, data/split.safetensors: consistent with the manifest, the split
    disjoint and complete, the index digests, embedded data files' digests, exact bytes;
  - steps.jsonl: canonical lines, numbering, the readable copies of every value against its bits,
    the step hash h_t recomputed from each record's fields, the final step hash, where the
    SHA-256 roots and evaluations must be, every step key re-derived from the seed (threefry);
  - lineage.jsonl: rebuilt byte for byte from the seed and the configuration;
  - checkpoints and final weights: exactly the checkpoints the schedule writes, metadata, the
    SHA-256 roots recomputed from the tensors and tied to their step records (the final weights
    to the last record), and the exact bytes of a deterministic safetensors writer.

What it cannot check is named in its output: the genesis hash (it commits to the initial state,
which the bundle does not store), the batch digests and — unless the `xxhash` module is
installed — the XXH3-128 state digests. Those, and whether the records are what the program
computes at all, are what `detrain verify` establishes by recompiling and replaying.

Usage: tools/check_bundle.py BUNDLE [--data DIR] [-q]
Exit codes (as `detrain verify`): 0 every check passed, 1 a check failed or the bundle is
incomplete, 2 input error (no such directory, not a bundle, a format version this checker does
not know).
"""
import argparse
import hashlib
import json
import math
import os
import re
import struct
import sys

try:  # optional: only for the XXH3-128 state digests
    import xxhash
except ImportError:
    xxhash = None

FORMAT_VERSION = 1
MERKLE_CHUNK = 1 << 20
HEX64 = re.compile(r"^[0-9a-f]{64}$")
# The stages a .dt program's bundle holds, in chain order (schemas/bundle.md "stages/"):
# name -> (number, file, transform, the stage it reads); eval and eval-plan only with a predict
# function and a validation split.
STAGES = {"program": (0, "00.program.dt", None, None),
          "source": (1, "01.source.hlo", "lower-source-graph", "program"),
          "hlo": (2, "02.hlo.hlo", "lower-train-step", "source"),
          "init": (2, "02.init.json", "init-plan", "source"),
          "eval": (2, "02.eval.hlo", "lower-eval", "program"),
          "opt-hlo": (3, "03.opt-hlo.hlo", "pass-pipeline", "hlo"),
          "plan": (4, "04.plan.pb", "cpu-plan", "opt-hlo"),
          "eval-plan": (4, "04.eval-plan.pb", "cpu-plan", "eval")}
# The stages of a run spec's bundle (schemas/run-spec.md 3): an imported train step.
RUN_SPEC_STAGES = {"program": (0, "00.program.json", None, None),
                   "source": (1, "01.source.hlo", "import-hlo", "program"),
                   "hlo": (2, "02.hlo.hlo", "import-train-step", "source"),
                   "init": (2, "02.init.json", "initial-state", "source"),
                   "opt-hlo": (3, "03.opt-hlo.hlo", "pass-pipeline", "hlo"),
                   "plan": (4, "04.plan.pb", "cpu-plan", "opt-hlo")}
CHECKPOINT_NAME = re.compile(r"^checkpoints/step-([0-9]{8})\.safetensors$")
# A run on the CUDA backend records the CUDA executable of the plan (and of the eval plan, prefix
# "eval-") in manifest.json's "executables" (schemas/bundle.md 4.3): the generated source, its
# PTX and a cubin per architecture.
CUBIN_ARCHS = ("sm_80", "sm_90")
PTX_ARCH = "compute_80"
TOOL_VERSION = re.compile(r"^[0-9]+\.[0-9]+$")


def cuda_stages(prefix, plan):
    """[(name, file, transform, the stage it reads)] of one plan's CUDA executable."""
    out = [(prefix + "cuda", "04.%scuda.cu" % prefix, "cuda-codegen", plan),
           (prefix + "ptx", "04.%sptx.ptx" % prefix, "nvrtc", prefix + "cuda")]
    for arch in CUBIN_ARCHS:
        out.append((prefix + "cubin-" + arch, "04.%scubin-%s.cubin" % (prefix, arch), "nvjitlink",
                    prefix + "ptx"))
    return out


class Failed(Exception):
    """A check failed (exit 1)."""


class Incomplete(Exception):
    """The bundle has no manifest: an interrupted run (exit 1)."""


class InputError(Exception):
    """Not something this checker can judge (exit 2)."""


def require(condition, message):
    if not condition:
        raise Failed(message)


# ---- canonical JSON (schemas/canonical-json.md) ------------------------------------------------


def js_number(x):
    """ECMAScript Number.prototype.toString of a double: the shortest round-trip digits."""
    if math.isnan(x) or math.isinf(x):
        raise Failed("canonical JSON has no NaN or infinity")
    if x == 0:
        return "0"
    if x < 0:
        return "-" + js_number(-x)
    mantissa, _, exponent = repr(x).partition("e")  # repr is the shortest round-trip form
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    stripped = all_digits.lstrip("0")
    n = len(whole) + (int(exponent) if exponent else 0) - (len(all_digits) - len(stripped))
    digits = stripped.rstrip("0")  # value = 0.DIGITS * 10^n
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return head + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def js_string(s):
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\b\f\n\r\t":
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) < 0x20:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def canonical_json(value):
    """The canonical text (str) of a parsed JSON value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-8"))
        return "{" + ",".join(js_string(k) + ":" + canonical_json(value[k]) for k in keys) + "}"
    raise TypeError(type(value))


def canonical_bytes(value):
    return canonical_json(value).encode("utf-8")


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError("duplicate key %r" % k)
        out[k] = v
    return out


def parse_json(data, where):
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as e:
        raise Failed("%s: not valid JSON (%s)" % (where, e))


def check_canonical_file(data, value, where):
    """A JSON file detrain writes is its canonical text plus one newline."""
    require(data == canonical_bytes(value) + b"\n",
            "%s: not in canonical JSON form (schemas/canonical-json.md) plus a newline" % where)


# ---- digests (schemas/merkle.md, schemas/tensor-digest.md) ------------------------------------


def sha256(data):
    return hashlib.sha256(data).digest()


def merkle_root_of_leaves(level):
    if not level:
        return sha256(b"")
    while len(level) > 1:
        nxt = [sha256(b"\x01" + level[i] + level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2 == 1:
            nxt.append(level[-1])  # carried up unchanged
        level = nxt
    return level[0]


def merkle_root(data):
    leaves = [sha256(b"\x00" + data[i:i + MERKLE_CHUNK]) for i in range(0, len(data), MERKLE_CHUNK)]
    return merkle_root_of_leaves(leaves)


# safetensors dtype -> (XLA name, bytes per element)
DTYPES = {"F32": ("f32", 4), "F64": ("f64", 8), "I32": ("s32", 4), "U32": ("u32", 4),
          "I64": ("s64", 8), "U64": ("u64", 8), "U8": ("u8", 1), "I8": ("s8", 1),
          "BOOL": ("pred", 1)}
NAN_RULES = {"f32": ("<I", 0x7F800000, 0x007FFFFF, 0x7FC00000),
             "f64": ("<Q", 0x7FF0000000000000, 0x000FFFFFFFFFFFFF, 0x7FF8000000000000)}


def canonical_nans(dtype, data):
    if dtype not in NAN_RULES:
        return data
    fmt, exp, mant, nan = NAN_RULES[dtype]
    size = struct.calcsize(fmt)
    out = bytearray(data)
    for i in range(0, len(data), size):
        (v,) = struct.unpack_from(fmt, data, i)
        if v & exp == exp and v & mant:
            struct.pack_into(fmt, out, i, nan)
    return bytes(out)


def tensor_digest(name, dtype, shape, data):
    """detrain.tensor.v1: SHA-256 over a canonical header and the Merkle root of the values."""
    header = canonical_bytes({"dtype": dtype, "name": name, "shape": list(shape)})
    return sha256(b"detrain.tensor.v1\x00" + struct.pack("<Q", len(header)) + header +
                  merkle_root(canonical_nans(dtype, data)))


def state_root(tensors):
    """SHA-256 state root: Merkle tree whose leaves are the tensor digests in name order."""
    names = sorted(tensors, key=lambda n: n.encode("utf-8"))
    return merkle_root_of_leaves([tensor_digest(n, *tensors[n]) for n in names])


def xxh3_tensor(name, dtype, shape, data):
    header = canonical_bytes({"dtype": dtype, "name": name, "shape": list(shape)})
    return xxhash.xxh3_128(struct.pack("<Q", len(header)) + header + data).digest()


DIGEST_CHUNK = 16384  # schemas/bundle.md 5.2, policy xxh3-128-chunked


def xxh3_chunked_tensor(name, dtype, shape, data):
    header = canonical_bytes({"dtype": dtype, "name": name, "shape": list(shape)})
    leaves = b"".join(xxhash.xxh3_128(data[i:i + DIGEST_CHUNK]).digest()
                      for i in range(0, len(data), DIGEST_CHUNK))
    return xxhash.xxh3_128(struct.pack("<Q", len(header)) + header + struct.pack("<Q", len(data))
                           + leaves).digest()


def step_hash(previous, r):
    """h_t from a parsed step record (schemas/bundle.md "The step hash")."""
    b = b"detrain.step.v1\x00" + previous + struct.pack("<Q", r["step"]) + bytes.fromhex(r["batch"])
    b += struct.pack("<II", r["key"][0], r["key"][1])
    b += bytes.fromhex(r["learning_rate_bits"])[::-1] + bytes.fromhex(r["loss_bits"])[::-1]
    state = bytes.fromhex(r["state"])
    b += bytes([len(state)]) + state
    roots = [r["roots"]["params"], r["roots"]["optimizer"]] if "roots" in r else []
    b += bytes([len(roots)]) + b"".join(bytes.fromhex(x) for x in roots)
    evals = []
    if "eval" in r:
        evals.append(r["eval"]["loss_bits"])
        if "accuracy_bits" in r["eval"]:
            evals.append(r["eval"]["accuracy_bits"])
    b += bytes([len(evals)]) + b"".join(bytes.fromhex(x)[::-1] for x in evals)
    return sha256(b)


def f32_of_bits(hex8):
    return struct.unpack("<f", bytes.fromhex(hex8)[::-1])[0]


def f32_bits(value):
    return struct.pack("<f", value)[::-1].hex()


# ---- threefry keys (schemas/key-lineage.md §5) -------------------------------------------------

M32 = 0xFFFFFFFF


def threefry(key, x0, x1):
    def rotl(v, r):
        return ((v << r) | (v >> (32 - r))) & M32

    ks = [key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDA]
    x0, x1 = (x0 + ks[0]) & M32, (x1 + ks[1]) & M32
    for g in range(5):
        for r in ((13, 15, 26, 6), (17, 29, 16, 24))[g % 2]:
            x0 = (x0 + x1) & M32
            x1 = rotl(x1, r) ^ x0
        x0 = (x0 + ks[(g + 1) % 3]) & M32
        x1 = (x1 + ks[(g + 2) % 3] + g + 1) & M32
    return [x0, x1]


assert threefry([0x13198A2E, 0x03707344], 0x243F6A88, 0x85A308D3) == [0xC4923A9C, 0x483DF7A0]


def key_of_seed(seed):
    s = seed & 0xFFFFFFFFFFFFFFFF
    return [s >> 32, s & M32]


def fold_in(key, data):
    return threefry(key, 0, data & M32)


class Lineage:
    """Writes a key lineage the way schemas/key-lineage.md specifies (node and use records)."""

    def __init__(self, mode):
        self.lines = [canonical_json({"format": "detrain-key-lineage", "mode": mode,
                                      "version": 1})]
        self.keys = []

    def seed(self, seed):
        return self._node({"argument": seed, "op": "seed", "parent": None}, key_of_seed(seed))

    def fold_in(self, parent, data):
        return self._node({"argument": data, "op": "fold_in", "parent": parent},
                          fold_in(self.keys[parent], data))

    def use(self, node, purpose):
        self.lines.append(canonical_json({"key": node, "purpose": purpose, "type": "use"}))

    def _node(self, fields, key):
        node = len(self.keys)
        self.keys.append(key)
        self.lines.append(canonical_json(dict(fields, id=node, key=key, type="node")))
        return node

    def text(self):
        return ("\n".join(self.lines) + "\n").encode("utf-8")


def expected_lineage(train, params, steps, steps_per_epoch):
    """The lineage of a run (the derivation order of schemas/bundle.md "Keys")."""
    lin = Lineage(train["prng"])
    root = lin.seed(train["seed"])
    split = lin.fold_in(root, 1)
    lin.use(split, "split")
    if params:  # a run spec draws no initial value (schemas/run-spec.md 4): no init branch
        init = lin.fold_in(root, 0)
        for i, name in enumerate(params):
            lin.use(lin.fold_in(init, i), "init " + name)
    shuffle = step_branch = None
    for t in range(steps):
        if t % steps_per_epoch == 0:
            if shuffle is None:
                shuffle = lin.fold_in(root, 3)
            lin.use(lin.fold_in(shuffle, t // steps_per_epoch),
                    "shuffle epoch %d" % (t // steps_per_epoch))
        if step_branch is None:
            step_branch = lin.fold_in(root, 2)
        step = lin.fold_in(step_branch, t)
        lin.use(step, "step %d" % t)
        for s in range(train["shards"]):
            lin.use(lin.fold_in(step, s), "step %d shard %d" % (t, s))
    return lin.text()


def step_key(seed, t):
    return fold_in(fold_in(key_of_seed(seed), 2), t)


# ---- safetensors --------------------------------------------------------------------------------


def read_safetensors(data, where):
    """(metadata, {name: (xla dtype, safetensors dtype, shape, bytes)}), checked strictly."""
    require(len(data) >= 8, "%s: shorter than the 8-byte header length" % where)
    (n,) = struct.unpack_from("<Q", data, 0)
    require(n <= len(data) - 8, "%s: header length %d exceeds the file" % (where, n))
    header = parse_json(data[8:8 + n].rstrip(b" "), where + " header")
    require(isinstance(header, dict), "%s: the header is not an object" % where)
    metadata = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors, spans = {}, []
    for name, t in header.items():
        require(isinstance(t, dict) and set(t) == {"dtype", "shape", "data_offsets"},
                "%s: tensor %s: expected dtype, shape, data_offsets" % (where, name))
        require(t["dtype"] in DTYPES, "%s: tensor %s: dtype %s" % (where, name, t["dtype"]))
        dtype, size = DTYPES[t["dtype"]]
        begin, end = t["data_offsets"]
        count = 1
        for d in t["shape"]:
            count *= d
        require(0 <= begin <= end <= len(body) and end - begin == count * size,
                "%s: tensor %s: offsets do not match its shape" % (where, name))
        spans.append((begin, end))
        tensors[name] = (dtype, t["dtype"], list(t["shape"]), body[begin:end])
    spans.sort()
    pos = 0
    for begin, end in spans:
        require(begin == pos, "%s: the data has a gap or an overlap" % where)
        pos = end
    require(pos == len(body), "%s: bytes after the last tensor" % where)
    return metadata, tensors


def write_safetensors(metadata, tensors):
    """The deterministic writer: canonical header, tensors in name order, padded to 8 bytes."""
    header, data, offset = {}, b"", 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors, key=lambda n: n.encode("utf-8")):
        _, st_dtype, shape, raw = tensors[name]
        header[name] = {"data_offsets": [offset, offset + len(raw)], "dtype": st_dtype,
                        "shape": shape}
        offset += len(raw)
        data += raw
    text = canonical_bytes(header)
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def shape_of_type(type_text):
    """"f32[4,8]" -> ("f32", [4, 8])."""
    m = re.fullmatch(r"([a-z0-9]+)\[([0-9,]*)\]", type_text)
    require(m is not None, "config: parameter type %r" % type_text)
    return m.group(1), [int(d) for d in m.group(2).split(",") if d]


# ---- the bundle --------------------------------------------------------------------------------


class Checker:
    """The checks, in order; each raises Failed at the first problem, naming it."""

    def __init__(self, bundle, data_dir=None, say=print):
        self.dir = bundle.rstrip("/") or "/"
        self.data_dir = data_dir
        self.say = say
        self.not_checked = []

    def read(self, rel):
        try:
            with open(os.path.join(self.dir, rel), "rb") as f:
                return f.read()
        except OSError as e:
            raise Failed("%s: cannot be read (%s)" % (rel, e.strerror))

    def run(self):
        self.open_manifest()
        self.check_manifest_fields()
        self.check_files()
        self.check_program_and_stages()
        self.check_run()
        self.check_data()
        self.check_steps()
        self.check_lineage()
        self.check_checkpoints()
        self.check_final_weights()
        self.check_environment()
        for what in self.not_checked:
            self.say("not checked: " + what)

    # -- manifest --

    def open_manifest(self):
        if not os.path.isdir(self.dir):
            raise InputError("%s: no such bundle directory" % self.dir)
        if not os.path.exists(os.path.join(self.dir, "manifest.json")):
            if os.path.exists(os.path.join(self.dir, "progress.json")) or \
                    os.path.exists(os.path.join(self.dir, "steps.jsonl")):
                raise Incomplete("the bundle is incomplete (no manifest.json): resume it with "
                                 "detrain run PROGRAM --attest -o BUNDLE --resume")
            raise InputError("%s: not a bundle (no manifest.json)" % self.dir)
        data = self.read("manifest.json")
        m = parse_json(data, "manifest.json")
        require(isinstance(m, dict), "manifest.json: not a JSON object")
        require(m.get("format") == "detrain.bundle", "manifest.json: format is not detrain.bundle")
        v = m.get("format_version")
        require(isinstance(v, int) and not isinstance(v, bool),
                "manifest.json: format_version is not an integer")
        if v != FORMAT_VERSION:
            raise InputError("manifest.json: format version %d; this checker reads version 1" % v)
        check_canonical_file(data, m, "manifest.json")
        body = {k: x for k, x in m.items() if k != "root_digest"}
        root = hashlib.sha256(canonical_bytes(body)).hexdigest()
        require(m.get("root_digest") == root,
                "manifest.json: root_digest %s is not the SHA-256 of its canonical body (%s)"
                % (m.get("root_digest"), root))
        self.m = m
        self.say("ok  manifest.json: canonical, format 1, root digest %s" % root)

    def check_manifest_fields(self):
        m = self.m
        keys = {"format", "format_version", "status", "program", "run", "config", "stages",
                "data", "steps", "lineage", "final", "checkpoints", "files", "root_digest"}
        if m.get("status") == "stopped":
            keys.add("stop")
        require(isinstance(m.get("run"), dict) and m["run"].get("backend") in ("cpu", "cuda"),
                "manifest.json: run.backend is not cpu or cuda")
        if m["run"]["backend"] == "cuda":
            keys.add("executables")  # the CUDA run's executable, and only a CUDA run's
        require(set(m) == keys, "manifest.json: fields %s, expected %s"
                % (sorted(m), sorted(keys)))
        require(m["status"] in ("complete", "stopped"), "manifest.json: status %r" % m["status"])
        if m["status"] == "stopped":
            require(isinstance(m["stop"], dict) and set(m["stop"]) == {"reason"} and
                    isinstance(m["stop"]["reason"], str), "manifest.json: stop.reason")
            # The step that failed is the one after the last record.
            require(m["stop"]["reason"].startswith("step %d: " % m["steps"]["count"]),
                    "manifest.json: stop.reason does not name step %d, the step after the last "
                    "record" % m["steps"]["count"])
            self.not_checked.append("stop.reason beyond its step number, and that step %d's "
                                    "loss is not finite: `detrain verify` replays that step"
                                    % m["steps"]["count"])
        for path in ("steps.genesis", "final.step_hash", "final.params_root",
                     "final.optimizer_root", "program.sha256"):
            a, b = path.split(".")
            require(isinstance(m[a].get(b), str) and HEX64.match(m[a][b]),
                    "manifest.json: %s is not 64 lowercase hex digits" % path)
        require(m["lineage"] == "lineage.jsonl", "manifest.json: lineage")
        require(m["steps"].get("path") == "steps.jsonl", "manifest.json: steps.path")
        require(m["data"].get("record") == "data/data.json", "manifest.json: data.record")
        require(m["final"].get("weights") == "final/weights.safetensors",
                "manifest.json: final.weights")
        require(m["final"]["steps_done"] == m["steps"]["count"],
                "manifest.json: final.steps_done differs from steps.count")
        self.config = m["config"]
        self.train = m["config"]["train"]
        self.params = [p["name"] for p in m["config"]["params"]]
        # The parameters whose initial values the run draws (init keys in the lineage): a .dt
        # program's. A run spec's state comes from its initial state file, whose record
        # (stages/02.init.json, schemas/run-spec.md 3) gives each tensor's role.
        self.drawn_params = list(self.params)
        if m["config"]["optimizer"]["name"] == "in-program":
            init_stage = [s for s in m["stages"] if s.get("stage") == "init"]
            require(len(init_stage) == 1, "manifest.json: a run spec's bundle has one init stage")
            init = parse_json(self.read("stages/" + init_stage[0]["file"]), "the init stage")
            self.params = [t["name"] for t in init["tensors"] if t["role"] == "parameter"]
        self.run_cfg = m["run"]
        self.count = m["steps"]["count"]
        steps = self.run_cfg["steps"]
        if m["status"] == "complete":
            require(self.count == steps, "manifest.json: status complete, but %d of the run's %d "
                    "steps are recorded" % (self.count, steps))
        else:
            require(self.count < steps, "manifest.json: status stopped after all steps")

    # -- files --

    def check_files(self):
        present = []
        for top, dirs, files in os.walk(self.dir):
            for name in dirs + files:
                path = os.path.join(top, name)
                rel = os.path.relpath(path, self.dir).replace(os.sep, "/")
                require(not os.path.islink(path), "%s: a symbolic link" % rel)
                if name in files:
                    require(os.path.isfile(path), "%s: not a regular file" % rel)
                    present.append(rel)
        present.sort(key=lambda p: p.encode("utf-8"))
        entries = self.m["files"]
        paths = [f["path"] for f in entries]
        require(paths == sorted(set(paths), key=lambda p: p.encode("utf-8")),
                "manifest.json: files[] is not sorted by path without repeats")
        for p in paths:
            require(not p.startswith("/") and ".." not in p.split("/") and "" not in p.split("/")
                    and "." not in p.split("/"), "manifest.json: file path %r" % p)
        require("manifest.json" not in paths and "final/weights.safetensors" not in paths,
                "manifest.json: files[] lists manifest.json or the final weights")
        expected = set(paths) | {"manifest.json", "final/weights.safetensors"}
        # attestation/ (signed statements about the finished bundle) is outside the manifest;
        # its signatures are for the standard verifiers (tests/evidence/standard_verifiers.py)
        # and `detrain verify --trusted-key`.
        present = [p for p in present if not p.startswith("attestation/")]
        for p in present:
            require(p != "progress.json", "progress.json is present: the bundle is incomplete")
            require(p in expected, "extra file %s: not listed in manifest.json" % p)
        for p in sorted(expected - set(present)):
            raise Failed("missing file %s (listed in manifest.json)" % p)
        total = 0
        self.sha = {}  # path -> SHA-256 of the file, computed here (the manifest records none)
        for f in entries:
            require(set(f) == {"path", "size", "merkle_root"},
                    "manifest.json: files[] entry %s: fields %s, expected merkle_root, path, size"
                    % (f["path"], sorted(f)))
            require(isinstance(f["size"], int) and not isinstance(f["size"], bool) and
                    isinstance(f["merkle_root"], str) and HEX64.match(f["merkle_root"]),
                    "manifest.json: files[] entry %s: size or merkle_root" % f["path"])
            data = self.read(f["path"])
            require(len(data) == f["size"], "%s: %d bytes; manifest.json records %d"
                    % (f["path"], len(data), f["size"]))
            require(merkle_root(data).hex() == f["merkle_root"],
                    "%s: Merkle root differs from manifest.json" % f["path"])
            self.sha[f["path"]] = hashlib.sha256(data).hexdigest()
            total += len(data)
        self.say("ok  files: %d listed (%d bytes), each size and Merkle root; nothing missing or "
                 "extra" % (len(entries), total))

    # -- program and stages --

    def check_program_and_stages(self):
        prog = self.m["program"]
        require(re.fullmatch(r"program/[^/]+", prog["path"]) is not None,
                "manifest.json: program.path must name a file in program/")
        require(self.sha.get(prog["path"]) == prog["sha256"],
                "program.sha256 is not the digest of %s" % prog["path"])
        stages = self.m["stages"]
        names = [s["stage"] for s in stages]
        run_spec = bool(stages) and stages[0].get("file") == RUN_SPEC_STAGES["program"][1]
        table = RUN_SPEC_STAGES if run_spec else STAGES
        require(names in (list(table), [n for n in table if not n.startswith("eval")]),
                "manifest.json: stages %s, expected %s (eval and eval-plan optional)"
                % (names, list(table)))
        for s in stages:
            number, file, transform, source = table[s["stage"]]
            require(s["number"] == number and s["file"] == file and
                    (s.get("transform") or {}).get("name") == transform and
                    (s.get("transform") or {}).get("input_stage") == source,
                    "stage %s: number, file or transform is not the format's" % s["stage"])
        require(stages[0]["sha256"] == prog["sha256"], "stage 0 is not the bundled program")
        seen = {}
        number = 0
        for s in stages:
            where = "stage %s" % s.get("stage")
            require(s["number"] >= number, where + ": stage numbers go down")
            number = s["number"]
            rel = "stages/" + s["file"]
            require(self.sha.get(rel) == s["sha256"], where + ": %s has another SHA-256" % rel)
            require(os.path.getsize(os.path.join(self.dir, rel)) == s["size"], where + ": size")
            if "transform" in s:
                t = s["transform"]
                require(seen.get(t["input_stage"]) == t["input_sha256"],
                        where + ": its input %s is not an earlier stage with that digest"
                        % t["input_stage"])
                self.check_transform(s, t, where)
            require(s["stage"] not in seen, where + ": twice")
            seen[s["stage"]] = s["sha256"]
        # stages/ holds the stage files, one dump per pass of the pipeline (its output) and the
        # plan as text; nothing else.
        expected = {"stages/" + s["file"] for s in stages} | {"stages/04.plan.txt"}
        opt = [s for s in stages if s["stage"] == "opt-hlo"]
        for i, p in enumerate(opt[0]["transform"]["passes"] if opt else []):
            rel = "stages/passes/%02d.%s.hlo" % (i + 1, p["pass"])
            require(self.sha.get(rel) == p["output_sha256"],
                    "%s: not the output the stage chain records for pass %d (%s)"
                    % (rel, i + 1, p["pass"]))
            expected.add(rel)
        passes = len(expected) - len(stages) - 1
        cuda_files = self.check_executables(seen)
        expected |= cuda_files
        listed = {p for p in self.sha if p.startswith("stages/")}
        require(listed == expected, "stages/: files %s are not the stage chain's%s"
                % (sorted(listed ^ expected), " and the CUDA executable's" if cuda_files else ""))
        # Stage 1's header holds the program's configuration (before any --steps override).
        head = self.read("stages/" + stages[1]["file"]).split(b"\n", 2) if len(stages) > 1 else []
        if len(head) > 1 and head[1].startswith(b"// config "):
            compiled = parse_json(head[1][len(b"// config "):], "stage 1 header")
            ours = json.loads(json.dumps(self.config))
            compiled["train"].pop("steps", None)
            ours["train"].pop("steps", None)
            require(ours == compiled, "manifest.json: config differs from stage 1's header")
        self.not_checked.append("the stage files' contents against the compiler (recompiling), "
                                "stages/04.plan.txt against 04.plan.pb (protobuf text), and the "
                                "eval-plan stage's last pass output (the optimized eval HLO, "
                                "not in the bundle): `detrain verify` recompiles them")
        self.say("ok  program and %d stages: digests, sizes, chain links, pass chains, %d pass "
                 "outputs; the configuration is stage 1's" % (len(stages), passes))

    def check_executables(self, seen):
        """A CUDA run's executable (schemas/bundle.md 4.3): for the plan and the eval plan, the
        generated source, its PTX and the cubins, each record's fields, digest, size, link to the
        stage it reads, and options. Returns the files."""
        if self.run_cfg["backend"] != "cuda":
            return set()
        e = self.m["executables"]
        require(isinstance(e, dict) and set(e) == {"cuda"} and isinstance(e["cuda"], list),
                "manifest.json: executables must be {\"cuda\": [stage records]}")
        records = e["cuda"]
        want = cuda_stages("", "plan") + (cuda_stages("eval-", "eval-plan")
                                          if "eval-plan" in seen else [])
        require([r.get("stage") if isinstance(r, dict) else None for r in records] ==
                [w[0] for w in want], "manifest.json: executables.cuda has the stages %s, "
                "expected %s" % ([r.get("stage") if isinstance(r, dict) else r for r in records],
                                 [w[0] for w in want]))
        versions, files = {}, set()
        for r, (name, file, transform, source) in zip(records, want):
            where = "executables.cuda stage %s" % name
            require(set(r) == {"stage", "number", "file", "size", "sha256", "transform"} and
                    isinstance(r["transform"], dict) and set(r["transform"]) ==
                    {"name", "options", "input_stage", "input_sha256"}, where + ": fields")
            t = r["transform"]
            require(r["number"] == 4 and r["file"] == file and t["name"] == transform and
                    t["input_stage"] == source,
                    where + ": number, file or transform is not the format's")
            rel = "stages/" + file
            require(self.sha.get(rel) == r["sha256"], where + ": %s has another SHA-256" % rel)
            require(os.path.getsize(os.path.join(self.dir, rel)) == r["size"], where + ": size")
            require(seen.get(source) == t["input_sha256"], where + ": its input %s is not the "
                    "stage with that digest" % source)
            self.check_cuda_options(name, t, where, versions)
            seen[name] = r["sha256"]
            files.add(rel)
        self.not_checked.append("the CUDA source against the plan, and the PTX and cubins "
                                "against NVRTC and nvJitLink: `detrain verify` generates the "
                                "source again and, with the recorded toolchain versions, compiles "
                                "them again")
        self.say("ok  CUDA executable: %d stages (source, PTX, cubins), digests, sizes, links; "
                 "nvrtc %s, nvjitlink %s" % (len(records), versions.get("nvrtc"),
                                              versions.get("nvjitlink")))
        return files

    def check_cuda_options(self, name, t, where, versions):
        """The options a CUDA stage's transform records; one NVRTC and one nvJitLink version."""
        o = t["options"]
        require(isinstance(o, dict), where + ": transform options")
        if t["name"] == "cuda-codegen":
            require(set(o) == {"format_version"} and isinstance(o["format_version"], int) and
                    o["format_version"] >= 1, where + ": options are not {format_version}")
            return
        tool = t["name"]
        arch = PTX_ARCH if tool == "nvrtc" else name.rsplit("cubin-", 1)[1]
        require(set(o) == {"arch", tool, "options"} and o["arch"] == arch and
                isinstance(o[tool], str) and TOOL_VERSION.match(o[tool]) and
                isinstance(o["options"], list) and all(isinstance(x, str) for x in o["options"]),
                where + ": options are not {arch: %s, %s: MAJOR.MINOR, options: [...]}"
                % (arch, tool))
        require(versions.setdefault(tool, o[tool]) == o[tool],
                where + ": %s %s, but another stage records %s" % (tool, o[tool], versions[tool]))

    def check_transform(self, s, t, where):
        """A stage's pipeline, passes and plan format version (schemas/bundle.md 4.3)."""
        options = t["options"]
        require(isinstance(options, dict), where + ": transform options")
        name = t["name"]
        has_pipeline = name == "pass-pipeline" or s["stage"] == "eval-plan"
        require(("pipeline" in t) == has_pipeline and ("passes" in t) == has_pipeline,
                where + ": pipeline and passes %s" % ("missing" if has_pipeline else
                                                      "not expected"))
        require(("plan_format_version" in t) == (name == "cpu-plan"),
                where + ": plan_format_version")
        if name == "cpu-plan":
            require(options.get("format_version") == t["plan_format_version"],
                    where + ": options.format_version is not plan_format_version")
        if has_pipeline:
            require(options.get("pipeline") == t["pipeline"],
                    where + ": options.pipeline is not the pipeline")
            passes = t["passes"]
            require(len(passes) > 0, where + ": a pipeline without passes")
            for a, b in zip(passes, passes[1:]):
                require(a["output_sha256"] == b["input_sha256"], where + ": pass chain")
            require(passes[0]["input_sha256"] == t["input_sha256"],
                    where + ": the first pass does not read the stage's input")
            if name == "pass-pipeline":
                # The last pass gives the stage; for eval-plan it gives the optimized eval HLO,
                # which the plan is built from and the bundle does not hold.
                require(passes[-1]["output_sha256"] == s["sha256"],
                        where + ": the passes do not lead from its input to it")

    def check_run(self):
        run, train = self.run_cfg, self.train
        raw = self.read("run.json")
        check_canonical_file(raw, parse_json(raw, "run.json"), "run.json")
        require(parse_json(raw, "run.json") == run, "run.json differs from manifest.json's run")
        require(run.get("format") == "detrain.run" and run.get("format_version") == 1,
                "run.json: format")
        require(run["steps"] == train.get("steps"), "run.steps differs from config.train.steps")
        for k in ("checkpoint_every", "eval_every"):
            require(run[k] == train[k], "run.%s differs from config.train.%s" % (k, k))
        require(run["state_digest"] in ("xxh3-128", "xxh3-128-chunked", "sha256"),
                "run.state_digest")
        require(run["backend"] in ("cpu", "cuda"), "run.backend")
        require(run["state_digest"] == self.m["steps"]["state_digest"],
                "run.state_digest differs from steps.state_digest")
        self.say("ok  run.json: the manifest's run options, consistent with the configuration")

    # -- data --

    def check_data(self):
        raw = self.read("data/data.json")
        d = parse_json(raw, "data/data.json")
        check_canonical_file(raw, d, "data/data.json")
        require(d.get("format") == "detrain.data" and d.get("format_version") == 1,
                "data/data.json: format")
        resolved = self.config["resolved"]
        md = self.m["data"]
        short = [{"path": f["path"], "sha256": f["sha256"]} for f in d["files"]]
        require(short == md["files"] == resolved["files"],
                "data files differ between data.json, manifest.data and config.resolved")
        split = d["split"]
        for k in ("rows", "train_rows", "validation_rows"):
            ours = split[k] if k != "rows" else split["rows"]
            require(ours == md[k] == resolved[k], "data: %s differs between data.json, "
                    "manifest.data and config.resolved" % k)
        rows = split["rows"]
        require(split["validation_rows"] == int(self.config["data"]["validation"] * rows),
                "data: validation_rows is not floor(validation * rows)")
        require(split["train_rows"] + split["validation_rows"] == rows, "data: row counts")
        embedded = 0
        for f in d["files"]:
            if "embedded" in f:
                embedded += 1
                require(re.fullmatch(r"data/files/[^/]+", f["embedded"]) is not None and
                        f["embedded"] in self.sha, "data.json: the embedded copy %r of %s is not "
                        "a listed file in data/files/" % (f["embedded"], f["path"]))
                data = self.read(f["embedded"])
                require(hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["size"],
                        "%s: not the data file %s the run read" % (f["embedded"], f["path"]))
            else:
                self.check_external_data(f)
        require((embedded == len(d["files"])) == bool(self.run_cfg["embed_data"]) or
                not d["files"], "run.embed_data disagrees with data.json")
        # The split.
        meta, t = read_safetensors(self.read("data/split.safetensors"), "data/split.safetensors")
        require(meta == {"detrain.format": "detrain.split.v1"}, "split.safetensors: metadata")
        standardized = d["standardize"] is not None
        names = {"train_index", "validation_index"} | ({"mean", "scale"} if standardized else set())
        require(set(t) == names, "split.safetensors: tensors %s" % sorted(t))
        index = {}
        for name in ("train_index", "validation_index"):
            dtype, _, shape, data = t[name]
            require(dtype == "s64" and len(shape) == 1, "split: %s is not s64[n]" % name)
            index[name] = list(struct.unpack("<%dq" % shape[0], data))
            require(tensor_digest(name, "s64", shape, data).hex() == split[name + "_sha256"],
                    "split: %s's tensor digest differs from data.json" % name)
        train, val = index["train_index"], index["validation_index"]
        require(len(train) == split["train_rows"] and len(val) == split["validation_rows"],
                "split: index lengths")
        require(sorted(train + val) == list(range(rows)),
                "split: train and validation rows are not disjoint or do not cover 0..%d"
                % (rows - 1))
        if standardized:
            require(d["standardize"]["features"] == t["mean"][2][0] == t["scale"][2][0],
                    "split: mean/scale length")
        b = d["batching"]
        require(b["batch"] == self.train["batch"], "data.json batching.batch")
        require(b["steps_per_epoch"] == split["train_rows"] // b["batch"],
                "data.json: steps_per_epoch is not floor(train_rows / batch)")
        require(write_safetensors(meta, t) == self.read("data/split.safetensors"),
                "split.safetensors: not the bytes of the deterministic writer")
        self.steps_per_epoch = b["steps_per_epoch"]
        self.say("ok  data: %d rows split %d/%d, disjoint and complete; index digests; %d data "
                 "file(s), %d embedded" % (rows, len(train), len(val), len(d["files"]), embedded))

    def check_external_data(self, f):
        candidates = []
        if self.data_dir:
            candidates.append(os.path.join(self.data_dir, os.path.basename(f["path"])))
        if f["path"].startswith("/"):
            candidates.append(f["path"])
        else:  # where the run found it: environment.json's hint (the digest decides)
            try:
                env = json.loads(self.read("environment.json"))
                candidates.append(os.path.join(os.path.dirname(env["program"]), f["path"]))
            except (Failed, ValueError, KeyError, TypeError):
                pass
        for c in candidates:
            if os.path.isfile(c):
                with open(c, "rb") as fh:
                    data = fh.read()
                require(hashlib.sha256(data).hexdigest() == f["sha256"] and
                        len(data) == f["size"], "dataset %s at %s is not the one the run read"
                        % (f["path"], c))
                self.say("ok  dataset %s at %s: SHA-256 and size" % (f["path"], c))
                return
        self.not_checked.append("dataset %s (not embedded, not found; give --data DIR)"
                                % f["path"])

    # -- steps --

    def check_steps(self):
        raw = self.read("steps.jsonl")
        require(raw.endswith(b"\n"), "steps.jsonl: the last line has no newline (torn)")
        lines = raw[:-1].split(b"\n")
        header = parse_json(lines[0], "steps.jsonl header")
        require(lines[0] == canonical_bytes(header), "steps.jsonl header: not canonical")
        want = {"format": "detrain.steps", "format_version": 1,
                "genesis": self.m["steps"]["genesis"],
                "state_digest": self.m["steps"]["state_digest"]}
        require(header == want, "steps.jsonl header differs from manifest.json's steps")
        digest_hex = 64 if header["state_digest"] == "sha256" else 32
        records = lines[1:]
        require(len(records) == self.count, "steps.jsonl holds %d records; manifest.json says %d"
                % (len(records), self.count))
        prev = bytes.fromhex(header["genesis"])
        steps = self.run_cfg["steps"]
        every_c, every_e = self.run_cfg["checkpoint_every"], self.run_cfg["eval_every"]
        tensor_names = None
        evaluated = []
        self.records = []
        for i, line in enumerate(records):
            where = "steps.jsonl line %d" % (i + 2)
            r = parse_json(line, where)
            require(line == canonical_bytes(r), where + ": not canonical")
            self.check_record_shape(r, where, digest_hex)
            require(r["step"] == i, where + ": the record of step %d, expected %d" % (r["step"], i))
            require(r["epoch"] == i // self.steps_per_epoch, where + ": epoch")
            require(r["key"] == step_key(self.train["seed"], i),
                    where + ": the step key is not fold_in(fold_in(key(seed), 2), t)")
            names = list(r["tensors"])
            if tensor_names is None:
                tensor_names = names
                require(set(self.params) <= set(names), where + ": parameters missing")
            require(names == tensor_names, where + ": other tensors than step 0")
            takes_roots = i + 1 == steps or (every_c > 0 and (i + 1) % every_c == 0)
            require(("roots" in r) == takes_roots,
                    where + ": roots %s" % ("missing" if takes_roots else "not expected here"))
            evaluated.append(("eval" in r, i + 1 == steps or
                              (every_e > 0 and (i + 1) % every_e == 0)))
            h = step_hash(prev, r)
            require(h.hex() == r["hash"], where + ": the hash does not chain (recomputed %s)"
                    % h.hex())
            prev = h
            self.records.append(r)
        has_eval = any(e for e, _ in evaluated)
        require(all(e == (has_eval and due) for e, due in evaluated),
                "steps.jsonl: evaluations are not where eval_every puts them")
        require(prev.hex() == self.m["final"]["step_hash"],
                "the last record's hash is not manifest.json's final step hash")
        self.tensor_names = tensor_names or []
        self.not_checked.append("the genesis hash (it commits to the initial state, which the "
                                "bundle does not hold), the batch digests (XXH3 of the "
                                "standardized batch) and the state digests between checkpoints: "
                                "`detrain verify` recomputes them by replay")
        self.say("ok  steps.jsonl: %d records chained from genesis to the final step hash; "
                 "readable values equal their bits; step keys re-derived from seed %d"
                 % (len(records), self.train["seed"]))

    def check_record_shape(self, r, where, digest_hex):
        base = {"batch", "epoch", "hash", "key", "learning_rate", "learning_rate_bits", "loss",
                "loss_bits", "state", "step", "tensors"}
        require(base <= set(r) <= base | {"roots", "eval"}, where + ": fields %s" % sorted(r))
        for k in ("batch", "hash"):
            require(HEX64.match(r[k]), where + ": %s" % k)
        require(re.fullmatch("[0-9a-f]{%d}" % digest_hex, r["state"]), where + ": state")
        for name, x in r["tensors"].items():
            require(re.fullmatch("[0-9a-f]{%d}" % digest_hex, x), where + ": tensor " + name)
        require(isinstance(r["key"], list) and len(r["key"]) == 2 and
                all(isinstance(k, int) and 0 <= k <= M32 for k in r["key"]), where + ": key")
        pairs = [(r, "loss"), (r, "learning_rate")]
        if "eval" in r:
            e = r["eval"]
            require(set(e) in ({"loss", "loss_bits"},
                               {"loss", "loss_bits", "accuracy", "accuracy_bits"}),
                    where + ": eval")
            pairs += [(e, "loss")] + ([(e, "accuracy")] if "accuracy" in e else [])
        for obj, k in pairs:
            require(re.fullmatch("[0-9a-f]{8}", obj[k + "_bits"]), where + ": %s_bits" % k)
            require(obj[k] == f32_of_bits(obj[k + "_bits"]),
                    where + ": %s %r is not the value of %s_bits %s"
                    % (k, obj[k], k, obj[k + "_bits"]))
        if "roots" in r:
            require(set(r["roots"]) == {"params", "optimizer"} and
                    all(HEX64.match(x) for x in r["roots"].values()), where + ": roots")
        # A run spec's optimizer is inside its step ("in-program"): it records a learning rate of 0.
        lr = self.config["optimizer"].get("learning_rate", {"name": "constant", "value": 0})
        if lr["name"] == "constant":
            require(r["learning_rate_bits"] == f32_bits(lr["value"]),
                    where + ": learning rate is not the constant schedule's value")

    # -- lineage --

    def check_lineage(self):
        got = self.read("lineage.jsonl")
        # A stopped run also derived the keys of the step whose loss was not finite.
        began = self.count + (1 if self.m["status"] == "stopped" else 0)
        want = expected_lineage(self.train, self.drawn_params, began, self.steps_per_epoch)
        if got != want:
            a, b = got.split(b"\n"), want.split(b"\n")
            n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            raise Failed("lineage.jsonl line %d differs from the lineage the seed and the "
                         "configuration give:\n    bundle:   %s\n    expected: %s"
                         % (n + 1, a[n][:160] if n < len(a) else b"<end>",
                            b[n][:160] if n < len(b) else b"<end>"))
        self.say("ok  lineage.jsonl: rebuilt byte for byte from seed %d (%d lines, every key by "
                 "threefry)" % (self.train["seed"], got.count(b"\n")))

    # -- checkpoints and final weights --

    def state_tensors(self, tensors, where):
        params = {n: tensors[n][:1] + tensors[n][2:] for n in self.params if n in tensors}
        require(len(params) == len(self.params), where + ": parameters missing")
        for p in self.config["params"]:
            dtype, shape = shape_of_type(p["type"])
            require(tensors[p["name"]][0] == dtype and tensors[p["name"]][2] == shape,
                    where + ": %s is not %s" % (p["name"], p["type"]))
        rest = {n: t[:1] + t[2:] for n, t in tensors.items() if n not in self.params}
        return params, rest

    def check_xxh3(self, tensors, record, where, whole):
        policy = self.m["steps"]["state_digest"]
        if xxhash is None or policy not in ("xxh3-128", "xxh3-128-chunked"):
            return False
        of = xxh3_tensor if policy == "xxh3-128" else xxh3_chunked_tensor
        digests = {n: of(n, t[0], t[2], t[3]) for n, t in tensors.items()}
        for n, d in digests.items():
            require(record["tensors"].get(n) == d.hex(),
                    where + ": tensor %s's XXH3-128 differs from step %d's record"
                    % (n, record["step"]))
        if whole:
            names = sorted(digests, key=lambda n: n.encode("utf-8"))
            state = xxhash.xxh3_128(b"".join(digests[n] for n in names)).digest()
            require(state.hex() == record["state"],
                    where + ": the XXH3-128 state digest differs from the record")
        return True

    def check_sha256_state(self, tensors, record, where):
        if self.m["steps"]["state_digest"] != "sha256":
            return False
        for n, t in tensors.items():
            require(record["tensors"].get(n) == tensor_digest(n, t[0], t[2], t[3]).hex(),
                    where + ": tensor %s's digest differs from the record" % n)
        require(state_root({n: t[:1] + t[2:] for n, t in tensors.items()}).hex() ==
                record["state"], where + ": the state digest differs from the record")
        return True

    def check_checkpoints(self):
        listed = [(p, int(m.group(1))) for p in sorted(self.sha)
                  for m in [CHECKPOINT_NAME.match(p)] if m]
        recorded = [(c["path"], c["steps_done"]) for c in self.m["checkpoints"]]
        require(recorded == listed, "manifest.json: checkpoints[] is not the checkpoint files")
        every = self.run_cfg["checkpoint_every"]
        for path, done in listed:
            require(every > 0 and done % every == 0 and 1 <= done <= self.count and
                    done < self.run_cfg["steps"],
                    "%s: not a checkpoint this run's schedule writes" % path)
        # Every checkpoint the schedule writes: after each K-th step that ran, below N.
        due = list(range(every, min(self.count, self.run_cfg["steps"] - 1) + 1, every)) \
            if every > 0 else []
        missing = sorted(set(due) - {done for _, done in listed})
        require(not missing, "checkpoints/step-%08d.safetensors: missing (the schedule writes a "
                "checkpoint every %d steps)" % (missing[0] if missing else 0, every))
        state_digests = 0
        for path, done in listed:
            r = self.records[done - 1]
            data = self.read(path)
            meta, t = read_safetensors(data, path)
            want = {"detrain.format": "detrain.checkpoint.v1", "detrain.steps_done": str(done),
                    "detrain.step_hash": r["hash"], "detrain.params_root": r["roots"]["params"],
                    "detrain.optimizer_root": r["roots"]["optimizer"]}
            require(meta == want, "%s: metadata differs from step %d's record" % (path, done - 1))
            require(sorted(t) == sorted(self.tensor_names),
                    "%s: not the tensors of the step records" % path)
            params, rest = self.state_tensors(t, path)
            require(state_root(params).hex() == r["roots"]["params"] and
                    state_root(rest).hex() == r["roots"]["optimizer"],
                    "%s: its tensors are not the state step %d's record names (SHA-256 roots "
                    "differ)" % (path, done - 1))
            if self.check_xxh3(t, r, path, True) or self.check_sha256_state(t, r, path):
                state_digests += 1
            require(write_safetensors(meta, t) == data,
                    "%s: not the bytes of the deterministic writer" % path)
        self.say("ok  %d checkpoint(s): metadata, SHA-256 roots tied to their step records%s"
                 % (len(listed), ", state digests" if state_digests else ""))

    def check_final_weights(self):
        fin = self.m["final"]
        data = self.read("final/weights.safetensors")
        meta, t = read_safetensors(data, "final/weights.safetensors")
        want = {"format": "pt", "detrain.format": "detrain.weights.v1",
                "detrain.bundle_root": self.m["root_digest"],
                "detrain.final_step_hash": fin["step_hash"],
                "detrain.params_root": fin["params_root"],
                "detrain.steps_done": str(fin["steps_done"])}
        require(meta == want, "final/weights.safetensors: metadata differs from manifest.json")
        require(sorted(t) == sorted(self.params),
                "final/weights.safetensors: not exactly the parameters")
        params, _ = self.state_tensors(t, "final/weights.safetensors")
        require(state_root(params).hex() == fin["params_root"],
                "final/weights.safetensors: its SHA-256 root is not final.params_root")
        require(write_safetensors(meta, t) == data,
                "final/weights.safetensors: not the bytes of the deterministic writer")
        tied = "not tied to a record (the last record has no roots)"
        if self.records and "roots" in self.records[-1]:
            last = self.records[-1]
            require(fin["params_root"] == last["roots"]["params"] and
                    fin["optimizer_root"] == last["roots"]["optimizer"],
                    "manifest.json: final.params_root/optimizer_root are not the last step "
                    "record's roots (the final weights are not the trained state)")
            tied = "equal to step %d's recorded roots" % last["step"]
            self.check_xxh3(t, last, "final/weights.safetensors", False)
        elif not self.records:
            tied = "no steps"
        else:
            self.not_checked.append("final.params_root and final.optimizer_root against a record "
                                    "(a stopped run's last record has no roots): replay checks")
        self.say("ok  final/weights.safetensors: metadata, SHA-256 root %s, exact bytes"
                 % tied)

    def check_environment(self):
        raw = self.read("environment.json")
        e = parse_json(raw, "environment.json")
        require(isinstance(e, dict) and e.get("format") == "detrain.environment",
                "environment.json: format")
        self.say("ok  environment.json: present (recorded, not part of the reproducibility "
                 "claim)")
        if xxhash is None:
            self.not_checked.append("XXH3-128 digests (no `xxhash` Python module)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle")
    ap.add_argument("--data", help="a directory holding the dataset files, by file name")
    ap.add_argument("-q", "--quiet", action="store_true", help="print only the result")
    args = ap.parse_args(argv)
    say = (lambda line: None) if args.quiet else print
    try:
        Checker(args.bundle, args.data, say).run()
    except InputError as e:
        print("check_bundle: %s" % e, file=sys.stderr)
        return 2
    except Incomplete as e:
        print("check_bundle: INCOMPLETE: %s" % e, file=sys.stderr)
        return 1
    except Failed as e:
        print("check_bundle: FAILED: %s" % e, file=sys.stderr)
        return 1
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as e:
        # A field missing or of the wrong type: the bundle is malformed.
        print("check_bundle: FAILED: malformed bundle (%s: %s)" % (type(e).__name__, e),
              file=sys.stderr)
        return 1
    print("check_bundle: OK: %s" % args.bundle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
