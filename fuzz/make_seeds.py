#!/usr/bin/env python3
"""Writes a few small valid safetensors files (the fuzzer's seed corpus) into the given folder."""
import json
import os
import struct
import sys


def blob(tensors, metadata=None, pad=True):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main(out):
    os.makedirs(out, exist_ok=True)
    seeds = {
        "empty": blob([]),
        "meta_only": blob([], {"format": "pt", "k\u00e9\n": "v\"\\"}),
        "f32": blob([("w", "F32", [2, 2], struct.pack("<4f", 1, -2, 3.5, 0))]),
        "all": blob([("b", "BOOL", [3], b"\x01\x00\x01"), ("i32", "I32", [2], struct.pack("<2i", -1, 7)),
                     ("i64", "I64", [], struct.pack("<q", 1 << 40)), ("f64", "F64", [1, 1], struct.pack("<d", 0.5)),
                     ("z", "F32", [0, 4], b"")], {"format": "pt"}),
        "widen": blob([("h", "F16", [2], b"\x00\x3c\x00\xc0"), ("bh", "BF16", [1], b"\x80\x3f"),
                       ("u8", "U8", [2], b"\xff\x00"), ("i8", "I8", [1], b"\x80"), ("i16", "I16", [1], b"\x00\x80"),
                       ("u16", "U16", [1], b"\xff\xff"), ("u32", "U32", [1], b"\xff\xff\xff\xff")]),
        "unpadded": blob([("x", "I64", [2], struct.pack("<2q", 3, 4))], None, pad=False),
    }
    for name, b in seeds.items():
        with open(os.path.join(out, name + ".safetensors"), "wb") as f:
            f.write(b)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "seeds")
