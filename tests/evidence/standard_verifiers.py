#!/usr/bin/env python3
"""Verifies a detrain audit bundle's signed attestations with the standard third-party tools,
not with detrain's own code:

  (a) BUNDLE/attestation/model.sig over BUNDLE/final/ with the real OpenSSF `model_signing
      verify key` CLI (a subprocess from the same virtual environment);
  (b) every BUNDLE/attestation/*.intoto.json DSSE envelope with securesystemslib's
      dsse.Envelope and SSlibKey (the key loaded the way in-toto loads a PEM public key, so the
      envelope's keyid must be securesystemslib's default keyid of that key), then the payload
      must be an in-toto Statement v1.

Run it with the interpreter of the environment that tools/setup-verifiers.sh creates:

  .venv-verifiers/bin/python tests/evidence/standard_verifiers.py [--expect-fail] [--only NAME]...
      BUNDLE PUBKEY.pem

--only NAME (repeatable; shell-style patterns) checks only the attestation files so named, e.g.
--only 'verification.*' for a verification summary signed by another key than the run's.

Exit status: 0 when everything verified, 1 when something did not (each reason printed), 2 on a
usage or environment error. --expect-fail inverts 0 and 1, for negative tests (wrong key, edited
weights): it exits 0 only when at least one check failed. Status 2 is never inverted.
"""
import argparse
import fnmatch
import json
import pathlib
import re
import subprocess
import sys
from importlib import metadata

IN_TOTO_STATEMENT_V1 = "https://in-toto.io/Statement/v1"
# in-toto attestation spec/v1/envelope.md: application/vnd.in-toto+json or
# application/vnd.in-toto.<predicate>+json.
IN_TOTO_PAYLOAD_TYPE = re.compile(r"application/vnd\.in-toto(\.[A-Za-z0-9_.-]+)?\+json")


class CheckFailed(Exception):
    pass


def usage_error(msg):
    print(f"standard_verifiers: {msg}", file=sys.stderr)
    sys.exit(2)


def find_model_signing():
    """The model_signing CLI of the environment this interpreter belongs to."""
    here = pathlib.Path(sys.executable).parent / "model_signing"
    if here.is_file():
        return here
    fallback = pathlib.Path(__file__).resolve().parents[2] / ".venv-verifiers/bin/model_signing"
    if fallback.is_file():
        return fallback
    usage_error("model_signing CLI not found; run tools/setup-verifiers.sh and use "
                ".venv-verifiers/bin/python")


def check_model_sig(bundle, pubkey):
    final = bundle / "final"
    sig = bundle / "attestation" / "model.sig"
    if not final.is_dir():
        raise CheckFailed(f"{final} is not a directory")
    if not sig.is_file():
        raise CheckFailed(f"{sig} does not exist")
    cmd = [str(find_model_signing()), "verify", "key", str(final),
           "--signature", str(sig), "--public_key", str(pubkey)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.strip()
    if proc.returncode != 0 or "Verification succeeded" not in out:
        raise CheckFailed(f"model_signing exited {proc.returncode}: {out}")
    return f"verified by model_signing {metadata.version('model-signing')}"


def check_envelope(path, key):
    from securesystemslib import dsse

    try:
        data = json.loads(path.read_bytes())
    except ValueError as e:
        raise CheckFailed(f"not JSON: {e}")
    if not isinstance(data, dict):
        raise CheckFailed("not a JSON object")
    try:
        envelope = dsse.Envelope.from_dict(data)
    except Exception as e:  # KeyError (missing field / keyid), binascii.Error, ...
        raise CheckFailed(f"not a DSSE envelope securesystemslib accepts: {type(e).__name__}: {e}")
    try:
        envelope.verify([key], 1)
    except Exception as e:
        keyids = list(envelope.signatures)
        hint = ""
        if key.keyid not in keyids:
            hint = (f" (envelope keyids {keyids}; securesystemslib keyid of the public key is "
                    f"{key.keyid}; a signature is only tried with the key whose keyid equals it)")
        raise CheckFailed(f"DSSE signature did not verify: {type(e).__name__}: {e}{hint}")
    if not IN_TOTO_PAYLOAD_TYPE.fullmatch(envelope.payload_type):
        raise CheckFailed(f"payloadType {envelope.payload_type!r} is not an in-toto type")
    try:
        statement = json.loads(envelope.payload)
    except ValueError as e:
        raise CheckFailed(f"payload is not JSON: {e}")
    if not isinstance(statement, dict):
        raise CheckFailed("payload is not a JSON object")
    if statement.get("_type") != IN_TOTO_STATEMENT_V1:
        raise CheckFailed(f"_type is {statement.get('_type')!r}, not {IN_TOTO_STATEMENT_V1}")
    subject = statement.get("subject")
    if (not isinstance(subject, list) or not subject
            or not all(isinstance(s, dict) and isinstance(s.get("digest"), dict) and s["digest"]
                       for s in subject)):
        raise CheckFailed("subject must be a non-empty list of descriptors with a digest")
    predicate_type = statement.get("predicateType")
    if not isinstance(predicate_type, str) or not predicate_type:
        raise CheckFailed("predicateType missing")
    return (f"verified by securesystemslib {metadata.version('securesystemslib')}, "
            f"predicateType {predicate_type}")


def main():
    parser = argparse.ArgumentParser(
        description="Verify a detrain audit bundle with model_signing and securesystemslib.")
    parser.add_argument("--expect-fail", action="store_true",
                        help="exit 0 only if some verification fails (negative tests)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="check only the attestation files matching NAME (repeatable)")
    parser.add_argument("bundle", type=pathlib.Path, metavar="BUNDLE")
    parser.add_argument("pubkey", type=pathlib.Path, metavar="PUBKEY.pem")
    args = parser.parse_args()  # exits 2 on a usage error

    if not args.bundle.is_dir():
        usage_error(f"{args.bundle} is not a directory")
    try:
        pem = args.pubkey.read_bytes()
    except OSError as e:
        usage_error(f"cannot read {args.pubkey}: {e}")
    try:
        from cryptography.hazmat.primitives.serialization import load_pem_public_key
        from securesystemslib.signer import SSlibKey
        metadata.version("model-signing")
    except (ImportError, metadata.PackageNotFoundError) as e:
        usage_error(f"{e}; run tools/setup-verifiers.sh and use .venv-verifiers/bin/python")
    try:
        # As in_toto.models._signer.load_public_key_from_file: SubjectPublicKeyInfo PEM ->
        # SSlibKey with the default keyid and scheme (ecdsa-sha2-nistp256 for P-256).
        key = SSlibKey.from_crypto(load_pem_public_key(pem))
    except Exception as e:
        usage_error(f"{args.pubkey} is not a usable PEM public key: {e}")

    def wanted(name):
        return not args.only or any(fnmatch.fnmatchcase(name, p) for p in args.only)

    checks = []
    if wanted("model.sig"):
        checks.append(("model.sig", lambda: check_model_sig(args.bundle, args.pubkey)))
    envelopes = [p for p in sorted((args.bundle / "attestation").glob("*.intoto.json"))
                 if wanted(p.name)]
    for path in envelopes:
        checks.append((path.name, lambda path=path: check_envelope(path, key)))

    failures = 0
    if not envelopes:
        print("*.intoto.json: FAILED: no DSSE envelopes in "
              f"{args.bundle / 'attestation'}")
        failures += 1
    for name, check in checks:
        try:
            print(f"{name}: {check()}")
        except CheckFailed as e:
            print(f"{name}: FAILED: {e}")
            failures += 1

    total = len(checks) + (0 if envelopes else 1)
    if args.expect_fail:
        if failures:
            print(f"expected failure: {failures} of {total} checks failed")
            return 0
        print(f"UNEXPECTED: all {total} checks verified, but --expect-fail was given")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
