#!/usr/bin/env python3
"""Hostile input, as a new user (or an attacker) would give it, to the detrain binary.

Every case runs `detrain` as a child process on a generated input and requires:
  - no signal (a crash, an abort, a stack overflow) and no hang: it finishes within 1 CPU second
    (CPU time, so that a loaded machine does not fail it; DETRAIN_TIME_SCALE multiplies the limit
    for sanitizer builds) and is killed as hung after 10 s of wall time;
  - the expected exit code: 2 (input error) unless the case says otherwise (a hostile bundle may
    be "failed", 1; a few valid-but-extreme inputs must succeed, 0);
  - where the input has a position, `FILE:LINE:COL` in the message (and, where given, the line
    and column, and a phrase of the message).

The classes are issue 13's: unbounded recursion, integer overflow in sizes, unbounded reads and
allocations, wrong values accepted; plus paths that are not regular files, binary garbage and
lying headers for each reader. Run: python3 tests/cli/hostile_inputs_test.py (DETRAIN_BINARY
names the binary; DETRAIN_SOURCE_DIR the repository). Prints one line per failing case and a
summary "N cases, N passed".
"""
import ctypes
import hashlib
import json
import os
import re
import resource
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

SRC = os.environ.get("DETRAIN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
sys.path.insert(0, os.path.join(SRC, "tools"))
from many_tensors import many_tensors, metadata_of  # noqa: E402  (tools/many_tensors.py)
import bundle_testlib  # noqa: E402  (reseals a bundle as a forger can)
BIN = os.environ.get("DETRAIN_BINARY", os.path.join(SRC, "build", "src", "cli", "detrain"))
TIME_LIMIT = 1.0 * float(os.environ.get("DETRAIN_TIME_SCALE", "1"))
TINY_DIR = os.path.join(SRC, "tests", "evidence", "testdata", "tiny")
POS = re.compile(r":(\d+):(\d+):")


class Case:
    def __init__(self, name, args, rc=(2,), pos=None, msg=None, stdout=None, secret=None,
                 absent=None, fsize=None, kind=None):
        self.name = name
        self.args = args      # argv after the binary; "{d}" is the case directory
        self.rc = rc          # acceptable exit codes
        self.pos = pos        # None: no position required; True: any; (line, col): that one
        self.msg = msg        # a phrase (or a list) the message must contain (case-insensitive)
        self.stdout = stdout  # a phrase stdout must contain (for cases that must succeed)
        self.secret = secret  # a phrase that must appear nowhere in the output
        self.absent = absent  # a path ("{d}/...") that must not exist afterwards
        self.fsize = fsize    # RLIMIT_FSIZE for the child (bytes), as `ulimit -f` sets it
        self.kind = kind      # (path, stat.S_IS* test) the path must still pass afterwards


def tiny_program():
    with open(os.path.join(TINY_DIR, "train.dt")) as f:
        return f.read()


HLO_HEAD = "HloModule t\nENTRY main {\n"


def hlo(body):
    return HLO_HEAD + body + "}\n"


def npy_bytes(header, data=b"", magic=b"\x93NUMPY", version=b"\x01\x00", hlen=None):
    h = header.encode("latin1")
    pad = 16 - (10 + len(h) + 1) % 16
    h = h + b" " * (pad % 16) + b"\n"
    n = len(h) if hlen is None else hlen
    return magic + version + struct.pack("<H", n) + h + data


MIB = b"\0" * (1 << 20)


def deflated_zeros(mib):
    """Raw deflate blocks (not final) for `mib` MiB of zero bytes, made in milliseconds: a full
    flush resets the compressor, so every further MiB is the same bytes."""
    if mib == 0:
        return b""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(MIB) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(MIB) + c.flush(zlib.Z_FULL_FLUSH)
    return first + again * (mib - 1)


def zip_archive(members):
    """A zip archive as numpy writes it (ZIP64 extra fields in every header). Each member is
    (name, method, data as stored, CRC-32, declared uncompressed size, local header offset: None
    writes the member's local header and data here, a number points at one written before)."""
    out, central = bytearray(), bytearray()
    for name, method, data, crc, size, at in members:
        name = name.encode()
        off = len(out) if at is None else at
        if at is None:
            out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, method, 0, 0x21, crc,
                               0xFFFFFFFF, 0xFFFFFFFF, len(name), 20) + name
            out += struct.pack("<HHQQ", 1, 16, size, len(data)) + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, method, 0, 0x21, crc,
                               0xFFFFFFFF, 0xFFFFFFFF, len(name), 28, 0, 0, 0, 0, 0xFFFFFFFF)
        central += name + struct.pack("<HHQQQ", 1, 24, size, len(data), off)
    cd, n = len(out), len(members)
    out += central
    end64 = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(central), cd)
    out += struct.pack("<IIQI", 0x07064B50, 0, end64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return bytes(out)


def npy_member(name, descr, shape, stored=False, declare=None):
    """An .npy member of zeros: (name, method, data, CRC-32, declared size, None)."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = npy_bytes("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims))
    zeros = 4 * shape[0] * (shape[1] if len(shape) > 1 else 1)
    crc = zlib.crc32(header + b"\0" * (zeros & 0xFFFFF))
    for _ in range(zeros >> 20):
        crc = zlib.crc32(MIB, crc)
    if stored:
        data = header + b"\0" * zeros
    else:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = (c.compress(header + b"\0" * (zeros & 0xFFFFF)) + c.flush(zlib.Z_FULL_FLUSH) +
                deflated_zeros(zeros >> 20) + b"\x03\x00")  # 03 00: an empty final block
    size = len(header) + zeros
    return (name, 0 if stored else 8, data, crc, size if declare is None else declare, None)


class Corpus:
    """Writes every case's files into one directory and lists the cases."""

    def __init__(self, root):
        self.root = root
        self.cases = []
        self.tiny = tiny_program()
        self.tiny_path = os.path.join(TINY_DIR, "train.dt")
        shutil.copy(os.path.join(TINY_DIR, "tiny.csv"), os.path.join(root, "tiny.csv"))
        os.mkfifo(os.path.join(root, "fifo"))
        os.mkdir(os.path.join(root, "adir"))
        os.symlink("/dev/zero", os.path.join(root, "zero-link"))
        self.ok_hlo = self.write("ok.hlo", hlo("  x = f32[2] parameter(0)\n"
                                               "  ROOT r = f32[2] add(x, x)\n"))
        self.good_npy = self.write("good.npy", npy_bytes(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8))

    def write(self, name, content):
        path = os.path.join(self.root, name)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode) as f:
            f.write(content)
        return path

    def add(self, *a, **k):
        self.cases.append(Case(*a, **k))

    # ---- .dt programs -----------------------------------------------------------------------
    def dt(self, name, text, **k):
        path = self.write(name + ".dt", text)
        self.add("dt/" + name, ["compile", path, "--hashes"], **k)

    def dt_expr(self, name, expr, **k):
        """The tiny program with its first hidden layer's expression replaced."""
        text = self.tiny.replace("h = relu(x @ w1 + b1)\n", "h = relu(" + expr + ")\n", 1)
        assert text != self.tiny
        self.dt(name, text, **k)

    def dt_line(self, name, old, new, **k):
        text = self.tiny.replace(old, new, 1)
        assert text != self.tiny, old
        self.dt(name, text, **k)

    def programs(self):
        for n in (10_000, 100_000):
            self.dt_expr(f"parens-{n}", "(" * n + "x @ w1" + ")" * n + " + b1", pos=True)
            self.dt_expr(f"unary-{n}", "-" * n + "x @ w1 + b1", pos=True)
            self.dt_expr(f"flat-add-{n}", "x @ w1 + b1" + " + b1" * n, pos=True)
            self.dt_expr(f"flat-mul-{n}", "x @ w1 * b1" + " * b1" * n, pos=True)
            self.dt_expr(f"calls-{n}", "relu(" * n + "x @ w1 + b1" + ")" * n, pos=True)
            self.dt_expr(f"mixed-{n}", "(-(" * (n // 2) + "x @ w1" + "))" * (n // 2) + " + b1",
                         pos=True)
            self.dt_line(f"brackets-{n}", "param b1: f32[8]",
                         "param b1: f32" + "[" * n + "8" + "]" * n, pos=True)
            self.dt_line(f"list-nesting-{n}", "metrics = [accuracy, loss]",
                         "metrics = " + "[" * n + "accuracy" + "]" * n, pos=True)
        for dim in ("99999999999999999999999", "9223372036854775808", "-1",
                    "18446744073709551616"):
            self.dt_line(f"dim-{dim}", "param b1: f32[8]", f"param b1: f32[{dim}]", pos=True)
        self.dt_line("dims-product-overflow", "param b1: f32[8]",
                     "param b1: f32[4294967296, 4294967296, 16]", pos=True)
        self.dt_line("dims-product-2^63", "param b1: f32[8]",
                     "param b1: f32[3037000500, 3037000500]", pos=True)
        self.dt_line("param-40GB", "param w2: f32[8, 2] = glorot_uniform",
                     "param w2: f32[8, 2] = glorot_uniform\nparam big: f32[100000, 100000]"
                     " = zeros", pos=True, msg="memory budget")
        for v in ("1e999", "1e39", "-1e39", "3.5e38", "1" + "0" * 400):
            self.dt_line(f"lr-{v[:12]}", "learning_rate = 1e-2", f"learning_rate = {v}",
                         pos=True, msg="range")
        for k, v in (("steps", "99999999999999999999"), ("steps", "9223372036854775807"),
                     ("batch", "99999999999999999999"), ("batch", "0"), ("batch", "-1"),
                     ("shards", "99999999999999999999"), ("shards", "0"),
                     ("seed", "99999999999999999999"), ("checkpoint_every", "-5")):
            text = re.sub(rf"\b{k} = [0-9]+", f"{k} = {v}", self.tiny, count=1)
            assert text != self.tiny, k
            self.dt(f"train-{k}-{v[:12]}", text, pos=True)
        self.dt_line("dropout-rate-1e999", "rate = 0.1", "rate = 1e999", pos=True)
        self.dt_line("validation-1e999", "validation = 0.25", "validation = 1e999", pos=True)
        self.dt("unterminated-string", self.tiny.replace('csv("tiny.csv"', 'csv("tiny.csv'),
                pos=True)
        self.dt("unterminated-block-comment", self.tiny + "\n/* open", pos=True)
        self.dt("nul-bytes", self.tiny[:200] + "\0" * 50 + self.tiny[200:], pos=True)
        self.dt("invalid-utf8", self.tiny.replace("param w1", "param w\udcff1", 1)
                .encode("utf-8", "surrogateescape").decode("latin1"), pos=True)
        self.dt("line-10MB", self.tiny + "\nparam z: f32[" + "1" * 10_000_000 + "]\n", pos=True)
        self.dt("ident-1M", self.tiny.replace("param b2", "param b" + "x" * 1_000_000, 1),
                rc=(0, 2))
        self.dt("empty", "", pos=None)
        self.dt("only-comment-no-newline", "# nothing here", pos=None)
        self.dt("garbage", "".join(chr(i % 256) for i in range(0, 40000, 7)), pos=True)
        self.dt("just-open-paren", "train(", pos=True)
        self.dt("def-no-body", "def loss(x: f32[B, 4], y: s32[B], key) -> f32[] {", pos=True)
        for name, path in (("devzero", "/dev/zero"), ("fifo", "{d}/fifo"),
                           ("dir", "{d}/adir"), ("missing", "{d}/nope.csv"),
                           ("zero-link", "{d}/zero-link")):
            self.dt_line(f"csv-{name}", 'csv("tiny.csv"', f'csv("{path.format(d=self.root)}"',
                         msg=None)
            self.dt_line(f"npz-{name}", 'csv("tiny.csv", label = -1, ',
                         f'npz("{path.format(d=self.root)}", features = "x", labels = "y", ',
                         msg=None)
        csv_cases = {
            "csv-1e39": "1e39,0,0,0,1\n" * 64,
            "csv-1e999": "1e999,0,0,0,1\n" * 64,
            "csv-nan": "nan,0,0,0,1\n" * 64,
            "csv-label-huge": "0,0,0,0,99999999999999999999\n" * 64,
            "csv-label-negative": "0,0,0,0,-1\n" * 64,
            "csv-ragged": "0,0,0,0,1\n" * 10 + "0,0,1\n" + "0,0,0,0,1\n" * 53,
            "csv-nul": "0,0,0,0,1\n" * 10 + "0,\0,0,0,1\n" + "0,0,0,0,1\n" * 53,
            "csv-empty": "",
            "csv-long-line": "0," * 2_000_000 + "1\n",
            "csv-quote": '"0,0,0,0,1\n' * 64,
        }
        for name, text in csv_cases.items():
            data = self.write(name + ".csv", text)
            self.dt_line(name, 'csv("tiny.csv"', f'csv("{data}"', rc=(2,))
        for name, path in (("devzero", "/dev/zero"), ("fifo", "{d}/fifo"), ("dir", "{d}/adir"),
                           ("missing", "{d}/missing.dt"), ("zero-link", "{d}/zero-link")):
            self.add(f"program-path/{name}", ["compile", path.format(d=self.root), "--hashes"])
            self.add(f"run-path/{name}", ["run", path.format(d=self.root)])

    # ---- HLO text ---------------------------------------------------------------------------
    def hlo(self, name, text, cmd="compile", **k):
        path = self.write(name + ".hlo", text)
        args = ["compile", path, "--hashes"] if cmd == "compile" else ["eval", path]
        self.add(f"hlo-{cmd}/" + name, args, **k)

    def hlo_modules(self):
        for n in (10_000, 100_000, 1_000_000):
            self.hlo(f"tuple-shape-{n}", hlo("  x = " + "(" * n + "f32[]" + ")" * n +
                                             " parameter(0)\n  ROOT r = f32[] constant(1)\n"),
                     pos=True)
            self.hlo(f"constant-braces-{n}", hlo("  ROOT x = f32[1] constant(" + "{" * n + "1" +
                                                 "}" * n + ")\n"), pos=True)
        n = 50_000
        comps = "".join(f"c{i} {{\n  a = f32[] parameter(0)\n  ROOT r = f32[] call(a), "
                        f"to_apply=c{i + 1}\n}}\n" for i in range(n))
        comps += f"c{n} {{\n  a = f32[] parameter(0)\n  ROOT r = f32[] negate(a)\n}}\n"
        self.hlo("call-chain-50000", "HloModule t\n" + comps + "ENTRY main {\n  x = f32[] "
                 "parameter(0)\n  ROOT r = f32[] call(x), to_apply=c0\n}\n", pos=None, rc=(0, 2))
        for dim in ("99999999999999999999999", "9223372036854775808", "-1", "-9223372036854775808"):
            self.hlo(f"dim-{dim}", hlo(f"  ROOT x = f32[{dim}] parameter(0)\n"), pos=True)
        self.hlo("dims-product-overflow", hlo("  ROOT x = f32[4294967296,4294967296,16] "
                                              "parameter(0)\n"), pos=True)
        self.hlo("dims-product-2^63", hlo("  ROOT x = f32[3037000500,3037000500] parameter(0)\n"),
                 pos=True)
        self.hlo("tensor-40GB", hlo("  ROOT x = f32[100000,100000] parameter(0)\n"), cmd="eval",
                 pos=True, msg="memory budget")
        self.hlo("tensor-40GB-constant", hlo("  ROOT x = f32[100000,100000] broadcast("
                 "f32[] constant(1)), dimensions={}\n").replace(
                     "broadcast(f32[] constant(1))", "broadcast(c)").replace(
                     "  ROOT", "  c = f32[] constant(1)\n  ROOT"), cmd="eval", pos=True,
                 msg="memory budget")
        for v in ("1e999", "1e39", "-1e39", "3.4028236e38", "1" + "0" * 400):
            self.hlo(f"constant-{v[:12]}", hlo(f"  ROOT x = f32[] constant({v})\n"), pos=True,
                     msg="range")
        for v in ("-nan(0x1)", "nan(0x1)", "nan(0x123)", "-nan(0x7fc00001)", "nan(0x3f800000)",
                  "nan(0x)", "nan(", "infinity", "1e", "0x10", "--1", "1..0", "1e+"):
            self.hlo(f"constant-{v}", hlo(f"  ROOT x = f32[] constant({v})\n"), pos=True)
        for v in ("99999999999999999999", "2147483648", "-2147483649"):
            self.hlo(f"s32-constant-{v}", hlo(f"  ROOT x = s32[] constant({v})\n"), pos=True)
        self.hlo("unterminated-comment", hlo("  ROOT x = f32[] constant(1)\n") + "/* open",
                 pos=(5, 1))
        self.hlo("unterminated-comment-mid", HLO_HEAD + "  /* open\n  ROOT x = f32[] "
                 "constant(1)\n}\n", pos=(3, 3))
        self.hlo("slice-huge-stride", hlo("  x = f32[10] parameter(0)\n  ROOT s = f32[1] slice(x),"
                 " slice={[0:10:9223372036854775807]}\n"), rc=(0,), stdout="sha256:")
        self.hlo("slice-huge-stride-eval", hlo("  x = f32[10] constant({0,1,2,3,4,5,6,7,8,9})\n"
                 "  ROOT s = f32[1] slice(x), slice={[3:10:9223372036854775807]}\n"), cmd="eval",
                 rc=(0,), stdout="{3}")
        big = "9223372036854775807"
        for name, body in (
            ("pad-overflow", f"  x = f32[10] parameter(0)\n  z = f32[] constant(0)\n  ROOT s = "
                             f"f32[4] pad(x, z), padding={big}_{big}\n"),
            ("pad-wrap", "  x = f32[10] parameter(0)\n  z = f32[] constant(0)\n  ROOT s = "
                         "f32[10] pad(x, z), padding=4611686018427387904_4611686018427387904_"
                         "4611686018427387904\n"),
            ("pad-interior-overflow", "  x = f32[10] parameter(0)\n  z = f32[] constant(0)\n"
                                      f"  ROOT s = f32[10] pad(x, z), padding=0_0_{big}\n"),
            ("pad-negative-huge", "  x = f32[10] parameter(0)\n  z = f32[] constant(0)\n"
                                  "  ROOT s = f32[10] pad(x, z), padding=-9223372036854775808_0\n"),
            ("slice-overflow", f"  x = f32[10] parameter(0)\n  ROOT s = f32[1] slice(x), "
                               f"slice={{[{big}:-{big}]}}\n"),
            ("broadcast-huge", "  x = f32[] parameter(0)\n  ROOT b = f32[4294967296,4294967296"
                               ",16] broadcast(x), dimensions={}\n"),
            ("iota-huge", "  ROOT i = f32[4294967296,4294967297] iota(), iota_dimension=0\n"),
            ("reshape-wrap", "  x = f32[16] parameter(0)\n  ROOT r = f32[4294967296,4294967296,"
                             "16] reshape(x)\n"),
            ("conv-dilation", "  x = f32[1,1,8] parameter(0)\n  w = f32[1,1,2] parameter(1)\n"
                              "  ROOT c = f32[1,1,8] convolution(x, w), window={size=2 "
                              f"rhs_dilate={big}}}, dim_labels=bf0_oi0->bf0\n"),
            ("conv-lhs-dilation", "  x = f32[1,1,8] parameter(0)\n  w = f32[1,1,2] parameter(1)"
                                  "\n  ROOT c = f32[1,1,8] convolution(x, w), window={size=2 "
                                  f"lhs_dilate={big}}}, dim_labels=bf0_oi0->bf0\n"),
            ("conv-pad", "  x = f32[1,1,8] parameter(0)\n  w = f32[1,1,2] parameter(1)\n  ROOT c ="
                         f" f32[1,1,8] convolution(x, w), window={{size=2 pad={big}_{big}}}, "
                         "dim_labels=bf0_oi0->bf0\n"),
            ("reduce-window-size", "  x = f32[8] parameter(0)\n  z = f32[] constant(0)\n  ROOT"
                                   f" r = f32[1] reduce-window(x, z), window={{size={big}}}, "
                                   "to_apply=add\n"),
            ("parameter-number-huge", "  ROOT x = f32[] parameter(99999999999)\n"),
            ("parameter-number-negative", "  ROOT x = f32[] parameter(-1)\n"),
            ("dimensions-huge-list", "  x = f32[2] parameter(0)\n  ROOT b = f32[2] broadcast(x),"
                                     " dimensions={" + ",".join(["0"] * 1_000_000) + "}\n"),
            ("dimension-out-of-range", "  x = f32[2,3] parameter(0)\n  ROOT t = f32[3,2] "
                                       "transpose(x), dimensions={1,9223372036854775807}\n"),
            ("duplicate-attribute", "  x = f32[2,3] parameter(0)\n  ROOT t = f32[3,2] "
                                    "transpose(x), dimensions={1,0}, dimensions={1,0}\n"),
            ("unknown-op", "  x = f32[2] parameter(0)\n  ROOT t = f32[2] frobnicate(x)\n"),
            ("nul-bytes", "  x = f32[2] par\0ameter(0)\n  ROOT r = f32[2] add(x, x)\n"),
            ("line-10MB", "  x = f32[2] parameter(0)\n  ROOT r = f32[2] add(x, x" +
                          ", x" * 2_500_000 + ")\n"),
            ("ident-1M", "  x" + "y" * 1_000_000 + " = f32[2] parameter(0)\n  ROOT r = f32[2] "
                         "add(x, x)\n"),
        ):
            text = hlo(body)
            if "to_apply=add" in body:
                text = ("HloModule t\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT s = f32[] add(a, b)\n}\n" + text[len("HloModule t\n"):])
            self.hlo(name, text, pos=True)
        # Valid at the extreme: one window of size 1 at stride 2^63-1 over 8 elements.
        self.hlo("reduce-window-huge-stride", "HloModule t\nadd {\n  a = f32[] parameter(0)\n"
                 "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY main {\n"
                 "  x = f32[8] constant({5,1,2,3,4,5,6,7})\n  z = f32[] constant(0)\n  ROOT r = "
                 f"f32[1] reduce-window(x, z), window={{size=1 stride={big}}}, to_apply=add\n}}\n",
                 cmd="eval", rc=(0,), stdout="{5}")
        self.hlo("empty", "", pos=None)
        self.hlo("garbage", "".join(chr(i % 256) for i in range(0, 40000, 7)), pos=True)

    # ---- --input .npy -----------------------------------------------------------------------
    def inputs(self):
        def ev(name, path, **k):
            self.add("input/" + name, ["eval", self.ok_hlo, "--input", "x=" + path], **k)

        for name, path in (("devzero", "/dev/zero"), ("fifo", self.root + "/fifo"),
                           ("dir", self.root + "/adir"), ("missing", self.root + "/nope.npy"),
                           ("zero-link", self.root + "/zero-link"), ("proc", "/proc/self/maps")):
            ev(name, path)
        f4 = "'descr': '<f4', 'fortran_order': False"
        npys = {
            "empty": b"",
            "magic-only": b"\x93NUMPY",
            "truncated-header": npy_bytes("{" + f4 + ", 'shape': (2,), }", b"\0" * 8)[:20],
            "truncated-data": npy_bytes("{" + f4 + ", 'shape': (2,), }", b"\0" * 7),
            "extra-data": npy_bytes("{" + f4 + ", 'shape': (2,), }", b"\0" * 12),
            "lying-shape-1e12": npy_bytes("{" + f4 + ", 'shape': (1000000000000,), }", b"\0" * 8),
            "shape-overflow": npy_bytes("{" + f4 + ", 'shape': (4294967296, 4294967296, 16), }"),
            "shape-int64-overflow": npy_bytes("{" + f4 + ", 'shape': (99999999999999999999999,), }"),
            "shape-negative": npy_bytes("{" + f4 + ", 'shape': (-2,), }", b"\0" * 8),
            "shape-nesting": npy_bytes("{" + f4 + ", 'shape': " + "(" * 10000 + ")" * 10000 + ", }"),
            "header-len-lies": npy_bytes("{" + f4 + ", 'shape': (2,), }", b"\0" * 8, hlen=65535),
            "header-garbage": npy_bytes("\xff" * 100, b"\0" * 8),
            "bad-descr": npy_bytes("{'descr': '<f9', 'fortran_order': False, 'shape': (2,), }",
                                   b"\0" * 8),
            "wrong-dtype": npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                                     b"\0" * 16),
            "wrong-shape": npy_bytes("{" + f4 + ", 'shape': (3,), }", b"\0" * 12),
            "fortran": npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
                                 b"\0" * 8),
            "version-9": npy_bytes("{" + f4 + ", 'shape': (2,), }", b"\0" * 8,
                                   version=b"\x09\x00"),
            "not-npy": b"hello, world\n" * 10,
        }
        for name, data in npys.items():
            ev(name, self.write(name + ".npy", data))
        ev("good", self.good_npy, rc=(0,), stdout="f32[2]")

    # ---- bundles ----------------------------------------------------------------------------
    def bundles(self):
        def verify(name, path, rc=(1, 2), **k):
            self.add("verify/" + name, ["verify", path], rc=rc, **k)

        for name, path in (("devzero", "/dev/zero"), ("fifo", self.root + "/fifo"),
                           ("missing", self.root + "/nope"), ("empty-dir", self.root + "/adir"),
                           ("a-file", self.ok_hlo)):
            verify(name, path)
        golden = os.path.join(SRC, "audit-bundles", "v1", "tiny")
        manifest_cases = {
            "manifest-devzero-link": None,
            "manifest-fifo": None,
            "manifest-nesting": "[" * 100_000 + "]" * 100_000,
            "manifest-number-1e999": '{"format": 1e999}',
            "manifest-int-overflow": '{"format_version": 99999999999999999999999999}',
            "manifest-empty": "",
            "manifest-nul": "\0" * 100,
            "manifest-huge-string": '{"x": "' + "a" * 5_000_000 + '"}',
            "manifest-unterminated": '{"files": [',
        }
        for name, content in manifest_cases.items():
            d = os.path.join(self.root, "bundle-" + name)
            shutil.copytree(golden, d, symlinks=True)
            m = os.path.join(d, "manifest.json")
            os.remove(m)
            if name == "manifest-devzero-link":
                os.symlink("/dev/zero", m)
            elif name == "manifest-fifo":
                os.mkfifo(m)
            else:
                with open(m, "w") as f:
                    f.write(content)
            verify(name, d)
        for rel, content in (("steps.jsonl", "[" * 100_000 + "\n"),
                             ("steps.jsonl", '{"step": 99999999999999999999999}\n'),
                             ("lineage.jsonl", "{" * 100_000 + "\n"),
                             ("run.json", '{"seed": 1e999}'),
                             ("checkpoints/step-00000008.safetensors",
                              struct.pack("<Q", 2**63 - 1) + b"{}"),
                             ("final/weights.safetensors", struct.pack("<Q", 8) + b"{" * 8)):
            d = os.path.join(self.root, "bundle-" + rel.replace("/", "_") + str(len(self.cases)))
            shutil.copytree(golden, d, symlinks=True)
            p = os.path.join(d, rel)
            if not os.path.exists(p):
                continue
            with open(p, "wb") as f:
                f.write(content if isinstance(content, bytes) else content.encode())
            verify("file-" + rel + "-" + str(len(self.cases)), d)
        d = os.path.join(self.root, "bundle-steps-fifo")
        shutil.copytree(golden, d, symlinks=True)
        os.remove(os.path.join(d, "steps.jsonl"))
        os.mkfifo(os.path.join(d, "steps.jsonl"))
        verify("steps-fifo", d)
        d = os.path.join(self.root, "bundle-steps-link")
        shutil.copytree(golden, d, symlinks=True)
        os.remove(os.path.join(d, "steps.jsonl"))
        os.symlink("/dev/zero", os.path.join(d, "steps.jsonl"))
        verify("steps-devzero-link", d)


    # ---- .npz archives that inflate past the memory budget --------------------------------
    def npz_archives(self):
        """Decompression is accounted against --max-memory from the declared sizes before
        anything is inflated (base/zip.h); each refusal names the file and the member."""
        def npz(name, members, max_memory="256M", rc=(2,), msg=None):
            path = self.write(name + ".npz", zip_archive(members))
            self.dt_line("npz-budget-" + name, 'csv("tiny.csv", label = -1, ',
                         f'npz("{path}", features = "x", labels = "y", ', rc=rc, msg=msg)
            self.cases[-1].args += ["--max-memory", max_memory]
            return path

        rows = (2 << 30) // 16  # x: 2 GiB of f32 zeros, about 2 MB deflated
        bomb = npy_member("x.npy", "<f4", (rows, 4))
        labels = npy_member("y.npy", "<i4", (64,))
        bomb_path = npz("bomb-2GiB", [bomb, labels], msg="bomb-2GiB.npz: extracting member 'x.npy'")
        # x exactly at the budget passes; x and y together are past it.
        npz("bomb-2GiB-x-at-the-budget", [bomb, labels], max_memory=str(bomb[4]), msg="together")
        mib200 = (200 << 20) // 16
        npz("two-below-the-limit-together-above", [npy_member("x.npy", "<f4", (mib200, 4)),
                                                   npy_member("y.npy", "<i4", (4 * mib200,))],
            msg="extracting the 2 members 'x.npy', 'y.npy' together")
        npz("declares-1KiB-inflates-to-2GiB", [bomb[:4] + (1024, None), labels],
            msg="inflates to more than its declared 1024 bytes")
        npz("declares-6GiB-of-2MB", [bomb[:4] + (6 << 30, None), labels],
            msg="deflate expands at most 1032:1")
        mib8 = (8 << 20) // 16
        npz("stored-16MiB", [npy_member("x.npy", "<f4", (mib8, 4), stored=True),
                             npy_member("y.npy", "<i4", (4 * mib8,), stored=True)],
            max_memory="12M", msg="--max-memory")
        # Overlapping members: every central entry points at x's local header (a zip bomb
        # made of one compressed stream counted many times).
        over = [npy_member("x.npy", "<f4", (64, 4))]
        over += [("d%d.npy" % i,) + over[0][1:5] + (0,) for i in range(20)]
        npz("overlapping-members", over, msg="local header names it 'x.npy'")
        self.bundle_with_npz(bomb_path)

    def bundle_with_npz(self, npz_path):
        """The tiny golden bundle, its program reading an embedded .npz (the bomb), resealed as a
        forger would: verify's recompile must refuse it from the declared sizes."""
        sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
        import bundle_testlib as bt  # noqa: E402 (needs SRC on the path)
        d = os.path.join(self.root, "bundle-npz-bomb")
        shutil.copytree(os.path.join(SRC, "audit-bundles", "v1", "tiny"), d, symlinks=True)
        with open(npz_path, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        program = bt.ReadBytes(d, "program/train.dt").decode().replace(
            'csv("tiny.csv", label = -1, ', 'npz("x.npz", features = "x", labels = "y", ')
        bt.WriteBytes(d, "program/train.dt", program.encode())
        os.remove(os.path.join(d, "data", "files", "tiny.csv"))
        bt.WriteBytes(d, "data/files/x.npz", data)
        record = json.loads(bt.ReadBytes(d, "data/data.json"))
        record["files"] = [{"embedded": "data/files/x.npz", "path": "x.npz", "sha256": digest,
                            "size": len(data)}]
        record["source"] = "npz"
        bt.WriteBytes(d, "data/data.json", bt.cb.canonical_bytes(record) + b"\n")
        m = bt.Manifest(d)
        m["program"]["sha256"] = hashlib.sha256(program.encode()).hexdigest()
        m["data"]["files"] = [{"path": "x.npz", "sha256": digest}]
        for f in m["files"]:
            if f["path"] == "data/files/tiny.csv":
                f["path"] = "data/files/x.npz"
        m["files"].sort(key=lambda f: f["path"].encode("utf-8"))
        bt.Reseal(d, m)
        self.add("verify/npz-bomb-embedded", ["verify", d, "--max-memory", "256M"], rc=(1, 2),
                 msg="data/files/x.npz: extracting member 'x.npy'")
def declared_size_cases(corpus):
    """Issue 35, class 11: a bundle whose program declares enormous tensors. verify compares each
    stage as it is made, so a program that differs from its recorded stages is FAILED at stage 1
    at once, under any budget (before: 2 minutes and 6 GB, or "out of memory"); one whose stages
    were rewritten to match is refused by the budget (exit 2, naming what and --max-memory)
    before anything of its size is allocated; the golden bundle verifies at exactly its largest
    file's size and is refused (exit 2, not FAILED) one byte below it."""
    root = corpus.root
    golden = os.path.join(SRC, "audit-bundles", "v1", "tiny")
    tiny = corpus.tiny

    def sub(text, old, new):
        assert old in text, old
        return text.replace(old, new, 1)

    big = "param b2: f32[2]    = zeros\nparam big: f32[28000, 28000] = "
    hidden = "50000000"
    programs = {
        "param": sub(tiny, "param b2: f32[2]    = zeros", big + "zeros"),
        "glorot": sub(tiny, "param b2: f32[2]    = zeros", big + "glorot_uniform"),
        "hidden": sub(sub(sub(tiny, "param w1: f32[4, 8]", f"param w1: f32[4, {hidden}]"),
                          "param b1: f32[8]", f"param b1: f32[{hidden}]"),
                      "param w2: f32[8, 2]", f"param w2: f32[{hidden}, 2]"),
        "constant": sub(sub(tiny, "param b2: f32[2]    = zeros", big + "zeros"),
                        "return mean(softmax_cross_entropy(h @ w2 + b2, y))",
                        "return mean(softmax_cross_entropy(h @ w2 + b2, y)) + mean(big * 0.5 + 2)"),
    }

    def forged(name, program, stages=False):
        """The golden bundle with `program`, resealed; with `stages`, every stage file and record
        rewritten to what compiling it gives (the program has no validation split, so that no
        eval plan's pass records are needed)."""
        d = os.path.join(root, "bundle-" + name)
        shutil.copytree(golden, d)
        m = bundle_testlib.Manifest(d)
        bundle_testlib.WriteBytes(d, m["program"]["path"], program.encode())
        if stages:
            work = d + ".compile"
            os.mkdir(work)
            shutil.copy(os.path.join(d, m["program"]["path"]), work)
            shutil.copy(os.path.join(d, "data", "files", "tiny.csv"), work)
            opt = [s for s in m["stages"] if s["stage"] == "opt-hlo"][0]
            subprocess.run([BIN, "compile", os.path.join(work, "train.dt"), "--pipeline",
                            opt["transform"]["options"]["pipeline"], "--dump-dir", work + "/dump",
                            "--max-memory", "1024T"], check=True, capture_output=True)
            made = os.listdir(os.path.join(work, "dump"))
            for s in [s for s in m["stages"] if s["file"] not in made]:
                os.remove(os.path.join(d, "stages", s["file"]))
                m["files"] = [f for f in m["files"] if f["path"] != "stages/" + s["file"]]
            m["stages"] = [s for s in m["stages"] if s["file"] in made]
            digest = {}
            for s in m["stages"]:
                with open(os.path.join(work, "dump", s["file"]), "rb") as f:
                    data = f.read()
                bundle_testlib.WriteBytes(d, "stages/" + s["file"], data)
                s["sha256"] = digest[s["stage"]] = hashlib.sha256(data).hexdigest()
                s["size"] = len(data)
            for s in m["stages"]:
                if "transform" in s:
                    s["transform"]["input_sha256"] = digest[s["transform"]["input_stage"]]
                if s["stage"] == "opt-hlo":
                    with open(os.path.join(work, "dump", "summary.json")) as f:
                        s["transform"]["passes"] = json.load(f)["passes"]
            shutil.rmtree(work)
        else:
            digest = {"program": hashlib.sha256(program.encode()).hexdigest()}
            bundle_testlib.WriteBytes(d, "stages/00.program.dt", program.encode())
            m["stages"][0]["sha256"] = digest["program"]
            m["stages"][0]["size"] = len(program.encode())
        m["program"]["sha256"] = digest["program"]
        bundle_testlib.Reseal(d, m)
        return d

    for name, program in programs.items():
        d = forged("declares-" + name, program)
        for budget in ([], ["--max-memory", "64M"]):
            corpus.add(f"declared/{name}-differs{'-64M' if budget else ''}",
                       ["verify", d] + budget, rc=(1,), msg="stage 1 (source) differs")
    d = forged("declares-param-consistent",
               programs["param"].replace(", validation = 0.25", ""), stages=True)
    for budget, what in (("64M", "parameter 'big' f32[28000,28000] needs 2.9 GiB"),
                         ("4G", "the training state (16 tensors"),
                         ("12G", "the peak of the plan's buffers with the training state")):
        corpus.add(f"declared/param-consistent-{budget}", ["verify", d, "--max-memory", budget],
                   rc=(2,), msg=what)
    largest = max(os.path.getsize(os.path.join(dirpath, f))
                  for dirpath, _, files in os.walk(golden) for f in files)
    corpus.add("declared/golden-at-its-largest-file", ["verify", golden, "--max-memory",
                                                       str(largest)], rc=(0,))
    corpus.add("declared/golden-one-byte-below", ["verify", golden, "--max-memory",
                                                  str(largest - 1)], rc=(2,),
               msg="(raise it with --max-memory")
def many_tensor_cases(corpus, n=100_000):
    """Headers with many tensors (issue 35, class 3): a checkpoint, the final weights, the split
    (resealed, as a forger without a key can) and a run spec's initial state, each of n empty
    tensors. Every reader takes time linear in n (they took minutes: 17 s at 50,000)."""
    sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
    import bundle_testlib as tl  # noqa: E402
    golden = os.path.join(SRC, "audit-bundles", "v1", "tiny")
    for rel, args, rc, msg in (
            ("checkpoints/step-00000008.safetensors", ["verify", "--integrity-only"], (0, 1), None),
            ("checkpoints/step-00000008.safetensors", ["verify", "--no-replay"], (1,),
             "holds 100000 tensors"),
            ("final/weights.safetensors", ["verify", "--integrity-only"], (1,), "root differs"),
            ("data/split.safetensors", ["verify", "--integrity-only"], (1,), "train_index"),
            ("data/split.safetensors", ["inspect"], (0,), None)):
        d = os.path.join(corpus.root, "many-%s-%d" % (rel.split("/")[0], len(corpus.cases)))
        shutil.copytree(golden, d, symlinks=True)
        p = os.path.join(d, rel)
        if rel.startswith("final/"):
            tl.Reseal(d)
            data = many_tensors(n, metadata_of(p))
        else:
            data = many_tensors(n, metadata_of(p) if "step" in rel else None)
        with open(p, "wb") as f:
            f.write(data)
        if not rel.startswith("final/"):
            tl.Reseal(d)
        corpus.add("many-tensors/" + " ".join(args) + " " + rel, args + [d], rc=rc, msg=msg)
    spec = os.path.join(corpus.root, "many-initial-state")
    shutil.copytree(os.path.join(SRC, "examples", "jax", "mlp_bf16"), spec)
    with open(os.path.join(spec, "run.json")) as f:
        run = json.load(f)
    run["data"]["path"] = os.path.join(SRC, "examples", "digits", "digits.csv")
    with open(os.path.join(spec, "run.json"), "w") as f:
        json.dump(run, f)
    with open(os.path.join(spec, "initial_state.safetensors"), "wb") as f:
        f.write(many_tensors(n))
    corpus.add("many-tensors/compile initial state", ["compile", os.path.join(spec, "run.json")],
               msg="no tensor")


def run_case(case, root):
    args = [a.replace("{d}", root) for a in case.args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)

    def limits():
        if case.fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))

    try:
        p = subprocess.run([BIN] + args, capture_output=True, timeout=max(10, 5 * TIME_LIMIT),
                           cwd=root, preexec_fn=limits if case.fsize is not None else None)
    except subprocess.TimeoutExpired:
        return "hung (killed after %.0f s)" % max(10, 5 * TIME_LIMIT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds, not wall: the limit must not depend on what else the machine is doing.
    elapsed = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    err = p.stderr.decode("utf-8", "replace")
    out = p.stdout.decode("utf-8", "replace")
    first = err.strip().splitlines()[0][:200] if err.strip() else "(no message)"
    if p.returncode < 0:
        return f"killed by signal {-p.returncode}: {first}"
    if p.returncode not in case.rc:
        return f"exit {p.returncode}, expected {case.rc}: {first}"
    if elapsed > TIME_LIMIT:
        return f"took {elapsed:.2f} CPU s (limit {TIME_LIMIT:.1f} s)"
    if "runtime error:" in err or "AddressSanitizer" in err:
        return "sanitizer report: " + first
    if p.returncode != 0 and not err.strip():
        return "failed without a message"
    if case.pos is not None and p.returncode != 0:
        m = POS.search(err)
        if not m:
            return "no FILE:LINE:COL in: " + first
        if isinstance(case.pos, tuple) and (int(m.group(1)), int(m.group(2))) != case.pos:
            return f"position {m.group(1)}:{m.group(2)}, expected {case.pos}: {first}"
    for phrase in (case.msg if isinstance(case.msg, list) else [case.msg] if case.msg else []):
        if phrase.lower() not in err.lower():
            return f"message lacks '{phrase}': {first}"
    if case.stdout and case.stdout not in out:
        return f"stdout lacks '{case.stdout}': {out[:200]}"
    if case.secret and (case.secret in out or case.secret in err):
        return f"the output shows '{case.secret}', read through a link"
    if case.absent and os.path.lexists(case.absent.replace("{d}", root)):
        return f"{case.absent} was written"
    if case.kind and not case.kind[1](os.lstat(case.kind[0].replace("{d}", root)).st_mode):
        return f"{case.kind[0]} was replaced"
    return None


def signing_cases(corpus):
    """Keys and archives (schemas/attestation.md): key files and tar archives that lie."""
    root = corpus.root
    golden = os.path.join(SRC, "audit-bundles", "v1", "tiny")
    specials = (("devzero", "/dev/zero"), ("fifo", root + "/fifo"), ("dir", root + "/adir"),
                ("missing", root + "/nope"), ("zero-link", root + "/zero-link"))
    keys = {
        "empty": b"",
        "garbage": bytes(range(256)) * 40,
        "pem-header-only": b"-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n",
        "pem-bad-base64": b"-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n",
        "huge": b"A" * (1 << 20),
        "nested-pem": b"-----BEGIN PUBLIC KEY-----\n" * 5000,
    }
    for name, path in specials + tuple((n, corpus.write("key-" + n + ".pub", d))
                                       for n, d in keys.items()):
        corpus.add("trusted-key/" + name, ["verify", golden, "--integrity-only",
                                           "--trusted-key", path], rc=(2,))
        corpus.add("sign-key/" + name, ["verify", golden, "--integrity-only",
                                        "--sign-key", path], rc=(2,))
    corpus.add("keygen/no-such-dir", ["keygen", "-o", root + "/nope/dir/key"], rc=(2,))

    def header(name, typ=b"0", size=b"00000000001", checksum=None):
        h = bytearray(512)
        h[0:len(name)] = name[:100]
        h[100:107] = b"0000644"
        h[124:124 + len(size)] = size[:12]
        h[156:157] = typ
        h[257:263] = b"ustar\0"
        h[263:265] = b"00"
        h[148:156] = b" " * 8
        h[148:154] = checksum if checksum else b"%06o" % sum(h)
        return bytes(h)

    end = b"\0" * 1024
    archives = {
        "dotdot": header(b"../evil") + b"x" + b"\0" * 511 + end,
        "absolute": header(b"/tmp/evil") + b"x" + b"\0" * 511 + end,
        "symlink": header(b"x", typ=b"2", size=b"00000000000") + end,
        "lying-size": header(b"x", size=b"77777777777") + end,
        "size-not-octal": header(b"x", size=b"99999999999") + end,
        "bad-checksum": header(b"x", checksum=b"000000") + b"x" + b"\0" * 511 + end,
        "truncated": header(b"x")[:300],
        "no-end": header(b"x") + b"x" + b"\0" * 511,
        "deep": header(b"/".join([b"a"] * 40)) + b"x" + b"\0" * 511 + end,
    }
    for name, data in archives.items():
        path = corpus.write("archive-" + name + ".tar", data)
        corpus.add("unpack/" + name, ["unpack", path, "-o", root + "/unpacked-" + name], rc=(2,))
        corpus.add("verify-archive/" + name, ["verify", path], rc=(1, 2))
    for name, path in specials:
        corpus.add("unpack/" + name, ["unpack", path, "-o", root + "/unpacked-" + name], rc=(2,))
        corpus.add("pack/" + name, ["pack", path, "-o", root + "/packed-" + name + ".tar"],
                   rc=(2,))


SECRET = "SECRET-CANARY-7f3a"


def link_cases(corpus):
    """Links and special files inside a bundle directory (issue 35, class 2): every reader —
    verify, inspect, its report, diff — refuses the bundle by the link's name, reads nothing
    through it and writes no report."""
    root = corpus.root
    golden = os.path.join(SRC, "audit-bundles", "v1", "tiny")
    secret = corpus.write("secret.txt", SECRET + "\n")
    secret_dir = os.path.join(root, "secret-dir")
    os.mkdir(secret_dir)
    with open(os.path.join(secret_dir, "train.dt"), "w") as f:
        f.write(SECRET + "\n")

    def variant(name, rel, make):
        d = os.path.join(root, "linked-" + name)
        shutil.copytree(golden, d, symlinks=True)
        p = os.path.join(d, rel)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.remove(p)
        make(p)
        return d

    variants = {
        "stage": ("stages/01.source.hlo", lambda p: os.symlink(secret, p)),
        "program": ("program/train.dt", lambda p: os.symlink(secret, p)),
        "program-dir": ("program", lambda p: os.symlink(secret_dir, p)),
        "manifest": ("manifest.json", lambda p: os.symlink(secret, p)),
        "relative": ("stages/02.hlo.hlo", lambda p: os.symlink("../../secret.txt", p)),
        "checkpoint": ("checkpoints/step-00000008.safetensors", lambda p: os.symlink(secret, p)),
        "split": ("data/split.safetensors", lambda p: os.symlink(secret, p)),
        "attestation-dir": ("attestation", lambda p: os.symlink(secret_dir, p)),
        "dangling": ("stages/04.plan.txt", lambda p: os.symlink(root + "/nope", p)),
        "fifo": ("program/train.dt", os.mkfifo),
    }
    for name, (rel, make) in variants.items():
        d = variant(name, rel, make)
        what = "a special file" if name == "fifo" else "a symbolic link"
        k = dict(secret=SECRET, msg=[" " + rel + ": ", what])
        corpus.add("link/verify-" + name, ["verify", d], rc=(1,), **k)
        corpus.add("link/inspect-" + name, ["inspect", d], **k)
        corpus.add("link/inspect-json-" + name, ["inspect", d, "--json"], **k)
        html = "{d}/report-" + name + ".html"
        corpus.add("link/inspect-html-" + name, ["inspect", d, "--html", html], absent=html, **k)
        corpus.add("link/diff-" + name, ["diff", golden, d], **k)
        corpus.add("link/diff-json-" + name, ["diff", d, golden, "--json"], **k)
        html = "{d}/diff-" + name + ".html"
        corpus.add("link/diff-html-" + name, ["diff", golden, d, "--html", html], absent=html,
                   **k)


def can_load(library):
    try:
        ctypes.CDLL(library)
        return True
    except OSError:
        return False


def option_cases(corpus):
    """Issue 35, classes 4, 5 and 7-10: the auditor's own options, outputs and paths."""
    root = corpus.root
    golden = os.path.join(SRC, "audit-bundles", "v1", "tiny")
    key = os.path.join(root, "auditor")
    subprocess.run([BIN, "keygen", "-o", key], check=True, capture_output=True)
    vsa = "{d}/vsa.json"
    # 4. An option this machine or the program cannot take is exit 2 and no signed summary.
    signed = ["--sign-key", key + ".key", "--summary-out", vsa]
    for name, opts in (("devices-3", ["--devices", "3"]),
                       ("devices-not-dividing", ["--devices", "8"]),
                       ("steps-outside", ["--steps", "0:999"])):
        corpus.add("verdict/" + name, ["verify", golden] + opts + signed, absent=vsa)
    corpus.add("verdict/devices-not-dividing-message", ["verify", golden, "--devices", "8"],
               msg="not a verdict on the bundle")
    if not can_load("libcuda.so.1"):
        corpus.add("verdict/cuda-without-gpu", ["verify", golden, "--backend", "cuda"] + signed,
                   absent=vsa, msg="not a verdict on the bundle")
    # 5. Paths that are not UTF-8, with --json: the JSON says U+FFFD where a byte was invalid.
    bad = os.path.join(root, "bad-\udcff-bundle")  # the byte 0xff (surrogateescape)
    shutil.copytree(golden, bad, symlinks=True)  # str paths with surrogates: bytes on disk
    corpus.add("utf8/inspect-json", ["inspect", bad, "--json"], rc=(0,), stdout="\ufffd")
    corpus.add("utf8/verify-json", ["verify", bad, "--integrity-only", "--json"], rc=(0,))
    corpus.add("utf8/verify-json-missing", ["verify", bad + "-nope", "--json"])
    corpus.add("utf8/digest-json", ["digest", bad, "--json"], rc=(0,))
    corpus.add("utf8/diff-json", ["diff", bad, golden, "--json"], rc=(0,))
    # 7. An output that exists and is not a regular file is refused, never replaced.
    dev = os.path.join(root, "null-device")
    specials = {"fifo": (root + "/fifo", stat.S_ISFIFO), "dir": (root + "/adir", stat.S_ISDIR),
                "link": (root + "/zero-link", stat.S_ISLNK)}
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # as /dev/null, here
        specials["device"] = (dev, stat.S_ISCHR)
    except OSError:
        pass  # not root: no device node to offer
    for name, (path, test) in specials.items():
        k = dict(kind=(path, test), msg="an output must be a new path or a regular file")
        corpus.add("output/pack-" + name, ["pack", golden, "-o", path], **k)
        corpus.add("output/inspect-html-" + name, ["inspect", golden, "--html", path], **k)
        corpus.add("output/diff-html-" + name, ["diff", golden, golden, "--html", path], **k)
        corpus.add("output/summary-" + name, ["verify", golden, "--integrity-only", "--sign-key",
                                              key + ".key", "--summary-out", path], **k)
    # 8. Errors of an archive name the archive and the entry, never a removed temporary.
    def tar(entries):
        out = b""
        for name, data in entries:
            h = bytearray(512)
            h[0:len(name)] = name
            h[100:107] = b"0000644"
            h[124:135] = b"%011o" % len(data)
            h[156:157] = b"0"
            h[257:263] = b"ustar\0"
            h[263:265] = b"00"
            h[148:156] = b" " * 8
            h[148:154] = b"%06o" % sum(h)
            out += bytes(h) + data + b"\0" * ((512 - len(data) % 512) % 512)
        return out + b"\0" * 1024 + b"\0" * ((10240 - (len(out) + 1024) % 10240) % 10240)

    below_file = corpus.write("below-file.tar", tar([(b"a", b"x"), (b"a/b", b"y")]))
    big = corpus.write("big-entry.tar", tar([(b"big.bin", b"z" * 65536)]))
    for cmd in (["unpack", below_file, "-o", "{d}/unpacked-below"], ["verify", below_file]):
        corpus.add("archive-names/" + cmd[0] + "-below-file", cmd, rc=(1, 2),
                   msg=["below-file.tar: entry 2", "is a file of an earlier entry"], secret=".tmp.")
    for cmd in (["unpack", big, "-o", "{d}/unpacked-big"], ["verify", big]):
        corpus.add("archive-names/" + cmd[0] + "-file-too-large", cmd, rc=(1, 2), fsize=16384,
                   msg=["big-entry.tar: entry 1", "File too large"], secret="detrain-unpack.")
    # 9. Numeric options: NaN, infinities, negatives, zero, overflow, other spellings.
    numeric = {
        "--rank-timeout": ["nan", "inf", "-inf", "-1", "0", "1e999", "86401", "5s"],
        "--threads": ["0", "-1", "257", "1e2", "0x10", "99999999999999999999", "2.5", "nan"],
        "--devices": ["0", "-2", "3", "16", "nan", "1.0"],
        "--max-memory": ["0", "-1", "nan", "inf", "1e3", "99999999999T", "1.5G"],
    }
    for opt, values in numeric.items():
        for v in values:
            for cmd in (["verify", golden, "--integrity-only"], ["run", corpus.tiny_path]):
                corpus.add("numeric/" + cmd[0] + opt + "=" + v, cmd + [opt, v])
    for v in ["0", "-1", "100000000", "nan", "1e3", "18446744073709551616"]:
        corpus.add("numeric/run--steps=" + v, ["run", corpus.tiny_path, "--steps", v])
    for v in ["0", "257", "nan"]:
        corpus.add("numeric/verify--jobs=" + v, ["verify", golden, "--jobs", v])
    for v in ["0", "1025", "nan"]:
        corpus.add("numeric/digest--threads=" + v, ["digest", golden, "--threads", v])
    corpus.add("numeric/boundary-threads-256", ["verify", golden, "--integrity-only", "--threads",
                                                "256", "--rank-timeout", "86400"], rc=(0,))
    # 10. One limit per value, whatever the form: a run spec's steps as a program's.
    spec_dir = os.path.join(root, "spec", "jax", "cnn_maxpool")  # its data: ../../digits/
    shutil.copytree(os.path.join(SRC, "examples", "jax", "cnn_maxpool"), spec_dir)
    shutil.copytree(os.path.join(SRC, "examples", "digits"), os.path.join(root, "spec", "digits"))
    with open(os.path.join(spec_dir, "run.json")) as f:
        spec = json.load(f)
    for steps, rc in ((99_999_999, (0,)), (100_000_000, (2,))):
        spec["train"].pop("epochs", None)
        spec["train"]["steps"] = steps
        path = corpus.write("spec/jax/cnn_maxpool/run-%d.json" % steps, json.dumps(spec))
        corpus.add("limits/run-spec-steps-%d" % steps, ["compile", path, "--emit", "hlo"], rc=rc,
                   msg=None if rc == (0,) else "must be at most 99999999")


class HostileInputs(unittest.TestCase):
    def test_every_case_fails_cleanly(self):
        if not os.path.exists(BIN):
            self.skipTest("detrain binary not built: " + BIN)
        root = tempfile.mkdtemp(prefix="detrain-hostile-")
        try:
            corpus = Corpus(root)
            corpus.programs()
            corpus.hlo_modules()
            corpus.inputs()
            corpus.bundles()
            corpus.npz_archives()
            signing_cases(corpus)
            link_cases(corpus)
            option_cases(corpus)
            declared_size_cases(corpus)
            many_tensor_cases(corpus)
            only = os.environ.get("DETRAIN_HOSTILE_FILTER")
            failures = []
            ran = 0
            for case in corpus.cases:
                if only and only not in case.name:
                    continue
                ran += 1
                why = run_case(case, root)
                if why:
                    failures.append(f"{case.name}: {why}")
            for f in failures:
                print("FAIL", f)
            print(f"{ran} cases, {ran - len(failures)} passed")
            self.assertEqual(failures, [])
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
