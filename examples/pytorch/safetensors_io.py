"""A tiny, self-contained safetensors reader and writer (numpy only; no `safetensors` package).

The format: an 8-byte little-endian unsigned header length N, then N bytes of UTF-8 JSON mapping
each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
data section) plus an optional "__metadata__" object of string values, then the raw little-endian
tensor data. The writer emits F32 only, header padded with spaces to a multiple of 8 bytes, as
Cohort does.
"""

import json
import os
import struct

import numpy as np

METADATA_KEY = "__metadata__"
MAX_HEADER_BYTES = 100_000_000

_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}


class SafetensorsFormatError(ValueError):
    """The bytes are not a safetensors file this reader accepts; the message names the tensor."""


def load(path):
    """Reads `path`. Returns (tensors, metadata): an ordered dict name -> numpy array (fresh,
    native byte order, in data-offset order) and the metadata dict (empty when absent)."""
    with open(path, "rb") as f:
        data = f.read()
    return loads(data, source=path)


def loads(data, source="<bytes>"):
    """Like `load`, from bytes."""
    if len(data) < 8:
        raise SafetensorsFormatError(f"{source}: {len(data)} bytes, shorter than the 8-byte header length")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > MAX_HEADER_BYTES or 8 + header_len > len(data):
        raise SafetensorsFormatError(f"{source}: header length {header_len} does not fit the {len(data)}-byte file")
    try:
        header = json.loads(data[8 : 8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsFormatError(f"{source}: header is not UTF-8 JSON: {e}") from e
    if not isinstance(header, dict):
        raise SafetensorsFormatError(f"{source}: header must be a JSON object")
    body = data[8 + header_len :]
    metadata = header.pop(METADATA_KEY, None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsFormatError(f"{source}: {METADATA_KEY} must be an object of strings")
    entries = []
    for name, entry in header.items():
        if not isinstance(entry, dict):
            raise SafetensorsFormatError(f"{source}: tensor {name!r}: entry must be an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if dtype not in _DTYPES:
            raise SafetensorsFormatError(f"{source}: tensor {name!r}: dtype {dtype!r} is not supported")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise SafetensorsFormatError(f"{source}: tensor {name!r}: shape must be a list of non-negative integers")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and o >= 0 for o in offsets)
            or offsets[0] > offsets[1]
            or offsets[1] > len(body)
        ):
            raise SafetensorsFormatError(f"{source}: tensor {name!r}: data_offsets {offsets!r} are out of the data section")
        np_dtype = np.dtype(_DTYPES[dtype])
        count = int(np.prod(shape)) if shape else 1
        if count * np_dtype.itemsize != offsets[1] - offsets[0]:
            raise SafetensorsFormatError(
                f"{source}: tensor {name!r}: shape {shape} of {dtype} needs {count * np_dtype.itemsize} bytes, "
                f"data_offsets give {offsets[1] - offsets[0]}"
            )
        entries.append((offsets[0], name, np_dtype, shape, offsets))
    entries.sort(key=lambda e: (e[0], e[1]))
    tensors = {}
    for _, name, np_dtype, shape, (begin, end) in entries:
        array = np.frombuffer(body, dtype=np_dtype, count=(end - begin) // np_dtype.itemsize, offset=begin)
        tensors[name] = array.reshape(shape).astype(np_dtype.newbyteorder("="), copy=True)
    return tensors, dict(metadata)


def dumps(tensors, metadata=None):
    """The safetensors bytes of `tensors` (an iterable of (name, array) pairs or a dict, laid out in
    that order, each written as F32) and `metadata` (a dict of strings, optional)."""
    items = list(tensors.items()) if isinstance(tensors, dict) else list(tensors)
    header = {}
    chunks = []
    offset = 0
    for name, array in items:
        if name == METADATA_KEY or name in header:
            raise ValueError(f"tensor name {name!r} is reserved or repeated")
        a = np.ascontiguousarray(np.asarray(array, dtype="<f4"))
        raw = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("metadata must map strings to strings")
        header[METADATA_KEY] = dict(sorted(metadata.items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save(path, tensors, metadata=None):
    """Writes `dumps(tensors, metadata)` to `path` whole or not at all (a temporary file, then a rename)."""
    data = dumps(tensors, metadata)
    temp = f"{path}.{os.getpid()}.tmp"
    with open(temp, "wb") as f:
        f.write(data)
    os.replace(temp, path)
