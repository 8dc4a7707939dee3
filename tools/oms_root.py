#!/usr/bin/env python3
"""Prints the OpenSSF model-signing root digest of a file or directory, computed by the
`model_signing` package itself (pip install model-signing pyopenssl; tested with 1.1.1, which has
no `digest` subcommand yet). Used once to produce the known-answer value in
tests/attest/dir_digest_test.cc; not a dependency of detrain.

Usage: python3 tools/oms_root.py PATH
"""
import sys, hashlib
from model_signing import hashing
m = hashing.Config().use_file_serialization().hash(sys.argv[1])
h = hashlib.sha256()
for d in m.resource_descriptors():
    h.update(d.digest.digest_value)
    print(d.identifier, d.digest.digest_hex, file=sys.stderr)
print("sha256:" + h.hexdigest())
