"""Reads and damages safetensors files for the training programs' tests.

  safetensors.py dump FILE               prints the metadata and each tensor
  safetensors.py truncate IN OUT N       the first N bytes (N < 0: all but -N)
  safetensors.py garble IN OUT           the JSON header with a brace removed
"""

import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    return data, length, json.loads(data[8 : 8 + length])


def dump(path):
    data, length, header = read(path)
    for key, value in sorted(header.get("__metadata__", {}).items()):
        print(f"__metadata__ {key} = {value}")
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = ", ".join(str(d) for d in entry["shape"])
        print(f"{name} {entry['dtype']} [{shape}]")
        end = max(end, entry["data_offsets"][1])
    if length % 8 == 0 and 8 + length + end == len(data):
        print("data ends at the end of the file")


def main():
    command = sys.argv[1]
    if command == "dump":
        dump(sys.argv[2])
        return
    with open(sys.argv[2], "rb") as f:
        data = f.read()
    if command == "truncate":
        data = data[: int(sys.argv[4])]
    elif command == "garble":
        (length,) = struct.unpack("<Q", data[:8])
        header = data[8 : 8 + length].replace(b"}", b" ", 1)
        data = data[:8] + header + data[8 + length :]
    else:
        sys.exit(f"unknown command {command}")
    with open(sys.argv[3], "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
