#!/usr/bin/python3
"""Reads one tensor of a safetensors file as a model loader does: the
header through read(2), the tensor through mmap(2) with numpy.

    mount_safetensors.py FILE TENSOR SCALE

Prints "ok SHAPE" if the tensor holds arange(n) * SCALE in its dtype, or
what differs. Run with Debian's /usr/bin/python3 (python3-numpy).
"""

import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64}


def main():
    path, name, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
    if name not in header:
        print(f"no tensor {name!r}; the header has {sorted(header)}")
        return 1
    t = header[name]
    dtype = np.dtype(DTYPES[t["dtype"]])
    begin, end = t["data_offsets"]
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len + begin,
                     shape=(end - begin,))
    tensor = data.view(dtype).reshape(t["shape"])
    want = (np.arange(tensor.size, dtype=np.float64) * scale).astype(dtype)
    flat = tensor.reshape(-1)
    if not np.array_equal(flat, want):
        bad = int(np.flatnonzero(flat != want)[0])
        print(f"element {bad} is {flat[bad]}, want {want[bad]}")
        return 1
    print("ok " + "x".join(str(d) for d in tensor.shape))
    return 0


if __name__ == "__main__":
    sys.exit(main())
