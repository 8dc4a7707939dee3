#!/usr/bin/env python3
"""Writes the .npz fixtures of tests/frontend/data_test.cc the way numpy.savez and
numpy.savez_compressed do (numpy/lib/_npyio_impl.py, _savez): Python's zipfile with
allowZip64=True, each array a member "<name>.npy" opened with force_zip64=True (so every local
header carries a ZIP64 extra field), as .npy format 1.0 (NEP 1, header padded to 64 bytes). It
needs no numpy, so the fixtures come from the same zip writer numpy uses, independent of
detrain's reader and of the test's own writer. Timestamps are fixed so the bytes reproduce.

Usage (from this directory): python3 make_npz.py   ->  savez.npz, savez_compressed.npz
"""
import struct
import zipfile


def npy(descr, shape, data):
    shape_text = "(" + "".join(f"{d}, " for d in shape)
    shape_text = shape_text[:-2] + ",)" if len(shape) == 1 else shape_text.rstrip(", ") + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


ARRAYS = {
    "x": npy("<f4", (3, 2), struct.pack("<6f", 0.5, 1, 2, 3, 4, 5)),
    "y": npy("<i8", (3,), struct.pack("<3q", 2, 0, 1)),
}

for path, method in (("savez.npz", zipfile.ZIP_STORED), ("savez_compressed.npz", zipfile.ZIP_DEFLATED)):
    with zipfile.ZipFile(path, mode="w", compression=method, allowZip64=True) as z:
        for name, data in ARRAYS.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            with z.open(info, "w", force_zip64=True) as f:
                f.write(data)
