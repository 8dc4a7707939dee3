#!/usr/bin/env python3
"""Checks the layering of src/ (DESIGN.md §9, docs/architecture.md): every `#include "..."` of
every source file under src/ must go to a layer its own layer may use.

The table below is the whole rule. Each layer is a set of path prefixes (relative to src/; the
longest matching prefix wins) and a rank; a file may include files of its own layer and of
layers with a lower rank, plus the entries of its layer's `also` list. Includes are resolved
against src/ (the project's include root), then against the including file's directory.
Quoted includes of generated headers (schemas/*.pb.h) and angle-bracket includes (system and
third-party headers) are not layer edges. A source file under no prefix, or an include that
resolves to no file, is an error too: a new folder must be given a layer here first.

Usage: tools/check_layers.py [--root DIR]   (DIR: the repository root; default: this checkout)
Exit status 0 when every edge is allowed; 1 with one line per forbidden edge otherwise:
  src/frontend/x.cc:12: frontend -> driver: #include "driver/stages.h" (frontend may include: ...)

Deterministic (files and lines in sorted order), no third-party modules, read-only.
"""
import argparse
import os
import re
import sys

# (layer, rank, path prefixes under src/). Lowest first; DESIGN.md §9 numbers in comments.
LAYERS = [
    ("base", 0, ["base/"]),  # 0: incl. base/math
    ("attest", 10, ["attest/prng/", "attest/"]),  # 1: primitives (files directly in attest/)
    # 2: ir < semantics < interp < passes < plan < codegen
    ("compiler/ir", 20, ["compiler/ir/"]),
    ("compiler/semantics", 21, ["compiler/semantics/"]),
    # XLA's HLO text into the IR: the ir parser's hooks and the legalizations. It uses ir only,
    # so it is semantics' sibling; the ir parser may not call into it (docs/architecture.md).
    ("compiler/xla_import", 21, ["compiler/xla_import/"]),
    ("compiler/interp", 22, ["compiler/interp/"]),
    ("compiler/passes", 23, ["compiler/passes/"]),
    ("compiler/plan", 24, ["compiler/plan/"]),  # stage 4, which every backend runs
    ("compiler/codegen/cuda", 25, ["compiler/codegen/cuda/"]),
    ("compiler/codegen/cpu", 25, ["compiler/codegen/cpu/"]),  # C++ loops (runtime/cpu compiles)
    ("frontend", 30, ["frontend/"]),  # 3: the .dt language (incl. autodiff/)
    ("driver", 40, ["driver/"]),  # 4: the compile driver, then the runtime
    ("runtime", 41, ["runtime/"]),
    # 5: the evidence about a run, lowest first: the bundle (writer and format), its signatures,
    # the verifier, the report (inspect, HTML) and diff (which reads bundles as the verifier does).
    ("evidence/bundle", 50, ["evidence/bundle/"]),
    ("evidence/sign", 51, ["evidence/sign/"]),
    ("evidence/verify", 52, ["evidence/verify/"]),
    ("evidence/report", 53, ["evidence/report/"]),
    ("evidence/diff", 54, ["evidence/diff/"]),
    ("cli", 60, ["cli/"]),  # 6
]

# Layers of equal rank are siblings: they may not include each other. Within one layer every
# include is allowed.

GENERATED = re.compile(r"^schemas/[A-Za-z0-9_]+\.pb\.h$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh", ".inc", ".def")


def LayerOf(rel):
    """The (name, rank) of the layer of `rel` (a path relative to src/), or None."""
    best = None
    for name, rank, prefixes in LAYERS:
        for prefix in prefixes:
            if rel.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), name, rank)
    # attest/ holds layer 1 only for files directly in it and in prng/; any other subfolder of
    # attest/ must be listed explicitly.
    nested = rel.count("/") > 1 and not rel.startswith("attest/prng/")
    if best is not None and best[1] == "attest" and nested:
        return None
    return None if best is None else (best[1], best[2])


def Allowed(from_layer, to_layer):
    return from_layer[0] == to_layer[0] or to_layer[1] < from_layer[1]


def MayInclude(layer):
    names = [n for n, r, _ in LAYERS if n == layer[0] or r < layer[1]]
    return ", ".join(names)


def Sources(src):
    found = []
    for dirpath, _, filenames in os.walk(src):
        found += [os.path.join(dirpath, f) for f in filenames if f.endswith(SOURCE_SUFFIXES)]
    return sorted(found)


def Check(root):
    src = os.path.join(root, "src")
    errors = []
    for path in Sources(src):
        rel = os.path.relpath(path, src).replace(os.sep, "/")
        shown = "src/" + rel
        layer = LayerOf(rel)
        if layer is None:
            errors.append(f"{shown}: in no layer; add its folder to tools/check_layers.py LAYERS")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if GENERATED.match(target):
                continue
            if os.path.isfile(os.path.join(src, target)):
                to_rel = os.path.normpath(target).replace(os.sep, "/")
            elif os.path.isfile(os.path.join(os.path.dirname(path), target)):
                to_rel = os.path.relpath(os.path.join(os.path.dirname(path), target), src)
                to_rel = os.path.normpath(to_rel).replace(os.sep, "/")
            else:
                errors.append(
                    f'{shown}:{number}: #include "{target}" resolves to no file under src/')
                continue
            to_layer = LayerOf(to_rel)
            if to_layer is None:
                errors.append(f'{shown}:{number}: #include "{target}": src/{to_rel} is in no layer')
            elif not Allowed(layer, to_layer):
                errors.append(f'{shown}:{number}: {layer[0]} -> {to_layer[0]}: #include "{target}" '
                              f"({layer[0]} may include: {MayInclude(layer)})")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=default_root, help="repository root (holds src/)")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.root, "src")):
        print(f"check_layers: {args.root} has no src/ folder", file=sys.stderr)
        return 2
    errors = Check(args.root)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} forbidden include edge(s); see docs/architecture.md",
              file=sys.stderr)
        return 1
    print("check_layers: every include follows the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
