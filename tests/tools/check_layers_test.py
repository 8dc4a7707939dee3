#!/usr/bin/env python3
"""Tests of tools/check_layers.py: the real tree passes, and a copy of it with one injected bad
include fails naming the file, the line and the edge; synthetic trees cover sibling layers,
unknown folders, unresolvable includes and relative includes. Each case works in its own
temporary directory; nothing outside it is written."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("DETRAIN_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "check_layers.py")


def Run(root):
    p = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout


def WriteTree(root, files):
    """Writes each {path relative to root: text} of `files`."""
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="check_layers_test.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def testTheTreePasses(self):
        code, out = Run(ROOT)
        self.assertEqual(code, 0, out)

    def testAnInjectedUpwardIncludeInACopyOfTheTreeFails(self):
        shutil.copytree(os.path.join(ROOT, "src"), os.path.join(self.tmp, "src"))
        path = os.path.join(self.tmp, "src", "base", "status.h")
        with open(path) as f:
            lines = f.readlines()
        at = next(i for i, l in enumerate(lines) if l.startswith("#include"))
        lines.insert(at, '#include "compiler/ir/module.h"\n')
        with open(path, "w") as f:
            f.writelines(lines)
        code, out = Run(self.tmp)
        self.assertEqual(code, 1, out)
        self.assertEqual(out.splitlines(), [
            f'src/base/status.h:{at + 1}: base -> compiler/ir: #include "compiler/ir/module.h" '
            "(base may include: base)"])

    def testDownwardAndSameLayerIncludesPass(self):
        WriteTree(self.tmp, {
            "src/base/a.h": "",
            "src/base/math/m.h": '#include "base/a.h"\n',
            "src/compiler/ir/i.h": '#include "base/math/m.h"\n',
            "src/compiler/passes/p.cc": '#include "compiler/ir/i.h"\n#include "q.h"\n',
            "src/compiler/passes/q.h": "#include <vector>\n",
            "src/cli/main.cc": '#include "compiler/passes/q.h"\n#include "schemas/x.pb.h"\n',
        })
        code, out = Run(self.tmp)
        self.assertEqual(code, 0, out)

    def testUpwardEdgesInsideTheCompilerFail(self):
        # The plan (stage 4, which every backend reads) sits below the CUDA code generator.
        WriteTree(self.tmp, {
            "src/compiler/codegen/cuda/k.h": "",
            "src/compiler/plan/k.cc": '#include "compiler/codegen/cuda/k.h"\n',
            "src/compiler/interp/e.cc": '\n#include "compiler/plan/k.cc"\n',
            "src/driver/d.h": "",
            "src/runtime/r.cc": '#include "driver/d.h"\n',
            "src/frontend/f.cc": '#include "runtime/r.cc"\n',
        })
        code, out = Run(self.tmp)
        self.assertEqual(code, 1, out)
        lines = out.splitlines()
        self.assertEqual(len(lines), 3, out)
        self.assertTrue(lines[0].startswith(
            "src/compiler/interp/e.cc:2: compiler/interp -> compiler/plan:"), out)
        self.assertTrue(lines[1].startswith(
            "src/compiler/plan/k.cc:1: compiler/plan -> compiler/codegen/cuda:"), out)
        self.assertTrue(lines[2].startswith("src/frontend/f.cc:1: frontend -> runtime:"), out)

    def testTheIrParserDoesNotCallTheXlaImporter(self):
        # compiler/xla_import/ uses ir/ only: ir/ may not include it, nor may its sibling
        # semantics/; the driver may.
        WriteTree(self.tmp, {
            "src/compiler/ir/parser.cc": '#include "compiler/xla_import/hooks.h"\n',
            "src/compiler/ir/module.h": "",
            "src/compiler/xla_import/hooks.h": '#include "compiler/ir/module.h"\n',
            "src/compiler/semantics/s.h": '#include "compiler/xla_import/hooks.h"\n',
            "src/driver/d.cc": '#include "compiler/xla_import/hooks.h"\n',
        })
        code, out = Run(self.tmp)
        self.assertEqual(code, 1, out)
        lines = out.splitlines()
        self.assertEqual(len(lines), 2, out)
        self.assertTrue(
            lines[0].startswith("src/compiler/ir/parser.cc:1: compiler/ir -> compiler/xla_import:"),
            out)
        self.assertTrue(lines[1].startswith(
            "src/compiler/semantics/s.h:1: compiler/semantics -> compiler/xla_import:"), out)

    def testNothingBelowIncludesTheEvidenceLayer(self):
        # The evidence layer (src/evidence/) sits above the runtime; its own folders are ordered
        # bundle < sign < verify < report < diff.
        WriteTree(self.tmp, {
            "src/evidence/bundle/b.h": "",
            "src/evidence/diff/d.h": '#include "evidence/verify/v.h"\n',
            "src/evidence/verify/v.h": '#include "evidence/bundle/b.h"\n#include "evidence/diff/d.h"\n',
            "src/attest/a.cc": '#include "evidence/bundle/b.h"\n',
            "src/runtime/r.cc": '#include "evidence/bundle/b.h"\n',
            "src/cli/c.cc": '#include "evidence/diff/d.h"\n',
        })
        code, out = Run(self.tmp)
        self.assertEqual(code, 1, out)
        lines = out.splitlines()
        self.assertEqual(len(lines), 3, out)
        self.assertTrue(lines[0].startswith("src/attest/a.cc:1: attest -> evidence/bundle:"), out)
        self.assertTrue(
            lines[1].startswith("src/evidence/verify/v.h:2: evidence/verify -> evidence/diff:"), out)
        self.assertTrue(lines[2].startswith("src/runtime/r.cc:1: runtime -> evidence/bundle:"), out)

    def testUnknownFoldersAndUnresolvedIncludesFail(self):
        WriteTree(self.tmp, {
            "src/evidence/bundle/w.cc": '#include "attest/sha.h"\n',
            "src/attest/sha.h": '#include "base/missing.h"\n',
            "src/attest/newthing/n.h": "",
            "src/gadgets/g.h": "",
        })
        code, out = Run(self.tmp)
        self.assertEqual(code, 1, out)
        self.assertEqual(out.splitlines(), [
            "src/attest/newthing/n.h: in no layer; add its folder to tools/check_layers.py LAYERS",
            'src/attest/sha.h:1: #include "base/missing.h" resolves to no file under src/',
            "src/gadgets/g.h: in no layer; add its folder to tools/check_layers.py LAYERS"])


if __name__ == "__main__":
    unittest.main()
