#!/usr/bin/env python3
"""Loads a `cohort versions export` safetensors file into a PyTorch model and prints a summary.

    /usr/bin/python3 examples/pytorch/load_export.py model.safetensors [--layers JSON] [--input 1,28,28] [--probe]

The layer list comes from the file's metadata, written by `cohort versions export`:
  cohort_layers  JSON of the spec's layer list, e.g. [{"type":"dense","units":200},{"type":"relu"},...]
                 (older exports: JSON of the layer widths, e.g. [784,200,10])
  cohort_input   JSON of one sample's shape, e.g. [1,28,28] (absent in older exports)
or from --layers (either JSON form, or comma-separated widths "784,200,10") and --input.

Prints the model, then `parameters: <count>` and `checksum: <sum of every parameter, float64>`;
with --probe also `probe logits: <values>`, the class logits (before any softmax) for the fixed
input x[i] = ((i mod 7) - 3) / 4. Use it as a
template: `model.layers` is an ordinary nn.Sequential whose state dict names are the file's.
"""

import argparse
import json
import os
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ beside the example (often a read-only checkout)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetensors_io  # noqa: E402
from cohort_model import SpecError, build_model, load_weights, normalize_spec  # noqa: E402


def parse_layers(text):
    """--layers: JSON (a layer list or widths) or comma-separated widths."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [int(w) for w in text.split(",")]


def probe_input(model):
    count = 1
    for d in model.input_shape:
        count *= d
    values = [((i % 7) - 3) / 4 for i in range(count)]
    return torch.tensor(values, dtype=torch.float32).reshape(1, *model.input_shape)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Load a cohort versions export into PyTorch.")
    parser.add_argument("file", help="safetensors file written by `cohort versions export`")
    parser.add_argument("--layers", help="layer list (JSON) or widths (784,200,10); default: the file's metadata")
    parser.add_argument("--input", help="one sample's shape, e.g. 1,28,28; default: the file's metadata")
    parser.add_argument("--probe", action="store_true", help="print the class logits for a fixed input")
    args = parser.parse_args(argv)

    try:
        tensors, metadata = safetensors_io.load(args.file)
        if args.layers:
            layers = parse_layers(args.layers)
        elif "cohort_layers" in metadata:
            layers = json.loads(metadata["cohort_layers"])
        else:
            raise SpecError(f"{args.file} has no cohort_layers metadata; pass --layers")
        if args.input:
            input_shape = [int(d) for d in args.input.split(",")]
        elif "cohort_input" in metadata:
            input_shape = json.loads(metadata["cohort_input"])
        else:
            input_shape = None
        spec = {"name": metadata.get("cohort_model", "model"), "layers": layers}
        if input_shape is not None:
            spec["input"] = input_shape
        normalize_spec(spec)
        model = build_model(spec, softmax="softmax")
        load_weights(model, tensors)
    except (SpecError, safetensors_io.SafetensorsFormatError, OSError, ValueError) as e:
        print(f"load_export: {e}", file=sys.stderr)
        return 2

    model.eval()
    commit = metadata.get("cohort_commit", "")
    print(f"model: {spec['name']} (commit {commit[:12] or '?'}, round {metadata.get('cohort_round', '?')})")
    print(f"input: {list(model.input_shape)}")
    print(model.layers)
    count = sum(p.numel() for p in model.parameters())
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"parameters: {count}")
    print(f"checksum: {checksum!r}")
    if args.probe:
        logits = model.layers[:-1] if isinstance(model.layers[-1], torch.nn.Softmax) else model.layers
        with torch.no_grad():
            out = logits(probe_input(model))[0]
        print("probe logits: " + " ".join(repr(float(v)) for v in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
