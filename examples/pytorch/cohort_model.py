"""Builds the PyTorch module a Cohort model spec describes, with Cohort's tensor names.

A spec is JSON in one of two forms:

- layer list: {"name": "cnn", "input": [1, 28, 28], "layers": [{"type": "conv2d", "filters": 32,
  "kernel": 5, "padding": "same"}, {"type": "relu"}, {"type": "maxpool2d", "size": 2},
  {"type": "flatten"}, {"type": "dense", "units": 10}, {"type": "softmax"}]}
- widths (older Cohort): {"name": "mlp", "layers": [784, 200, 10]}, meaning
  Linear(784, 200), ReLU, Linear(200, 10).

The module has one attribute, `layers`, an `nn.Sequential` with one entry per spec layer, so its
state dict names are exactly Cohort's: `layers.<i>.weight` / `layers.<i>.bias` for the
parameterized layer at index i of the layer list. A dense layer on a [C, H, W] input flattens
implicitly (CHW order, as torch.flatten(x, 1)) without taking an index of its own. `softmax` (last
only) has no parameters: for training it is an identity and the loss is softmax cross-entropy on
the logits; for inference it can be an `nn.Softmax(dim=1)`.
"""

import math

import torch
from torch import nn


class SpecError(ValueError):
    """The spec is not one this builder understands; the message names the layer and field."""


class FlatteningLinear(nn.Linear):
    """`nn.Linear` that flattens its input to [batch, features] first (a dense layer on an image).
    Same parameters and state dict names as `nn.Linear`."""

    def forward(self, x):
        return super().forward(torch.flatten(x, 1))


class CohortModel(nn.Module):
    """`layers`: the spec's layers as an `nn.Sequential`; `input_shape`: one sample's shape."""

    def __init__(self, layers, input_shape, classes):
        super().__init__()
        self.layers = layers
        self.input_shape = tuple(input_shape)
        self.classes = classes

    def forward(self, x):
        return self.layers(x)


def widths_to_layers(widths):
    """[in, h1, ..., out] -> the layer list of dense(h1), relu, ..., dense(out)."""
    layers = []
    for i, units in enumerate(widths[1:]):
        if i > 0:
            layers.append({"type": "relu"})
        layers.append({"type": "dense", "units": units})
    return layers


def normalize_spec(spec, input_shape=None):
    """(input_shape, layer list) of either spec form; `input_shape` overrides the spec's."""
    if isinstance(spec, list):
        spec = {"layers": spec}
    if not isinstance(spec, dict) or not isinstance(spec.get("layers"), list) or not spec["layers"]:
        raise SpecError("model spec must be an object with a non-empty 'layers' list")
    layers = spec["layers"]
    if all(isinstance(w, int) and not isinstance(w, bool) for w in layers):
        if len(layers) < 2:
            raise SpecError("model layers as widths need at least an input and an output width")
        return list(input_shape or [layers[0]]), widths_to_layers(layers)
    shape = input_shape if input_shape is not None else spec.get("input")
    if not isinstance(shape, list) or not shape or not all(isinstance(d, int) and d >= 1 for d in shape):
        raise SpecError(f"model input must be a non-empty list of positive integers, got {shape!r}")
    return list(shape), layers


def _positive(layer, index, field):
    value = layer.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SpecError(f"layers[{index}].{field} is {value!r}, must be a positive integer")
    return value


def build_model(spec, input_shape=None, softmax="identity"):
    """The CohortModel of `spec`. `softmax`: "identity" (training: logits out) or "softmax"."""
    shape, layer_specs = normalize_spec(spec, input_shape)
    input_shape = list(shape)
    modules = []
    classes = None
    for i, layer in enumerate(layer_specs):
        if not isinstance(layer, dict):
            raise SpecError(f"layers[{i}] must be an object, got {layer!r}")
        kind = layer.get("type", layer.get("kind"))
        if kind == "dense":
            units = _positive(layer, i, "units")
            features = math.prod(shape)
            modules.append(nn.Linear(features, units) if len(shape) == 1 else FlatteningLinear(features, units))
            shape = [units]
            classes = units
        elif kind == "conv2d":
            if len(shape) != 3:
                raise SpecError(f"layers[{i}] conv2d needs a [channels, height, width] input, got {shape}")
            filters, kernel = _positive(layer, i, "filters"), _positive(layer, i, "kernel")
            padding = layer.get("padding", "valid")
            if padding == "same":
                if kernel % 2 == 0:
                    raise SpecError(f"layers[{i}] conv2d 'same' padding needs an odd kernel, got {kernel}")
                pad = (kernel - 1) // 2
            elif padding == "valid":
                pad = 0
            elif isinstance(padding, int) and padding >= 0:
                pad = padding
            else:
                raise SpecError(f"layers[{i}].padding is {padding!r}, must be 'same' or 'valid'")
            c, h, w = shape
            out_h, out_w = h + 2 * pad - kernel + 1, w + 2 * pad - kernel + 1
            if out_h < 1 or out_w < 1:
                raise SpecError(f"layers[{i}] conv2d kernel {kernel} does not fit a {h}x{w} input")
            modules.append(nn.Conv2d(c, filters, kernel, padding=pad))
            shape = [filters, out_h, out_w]
        elif kind == "maxpool2d":
            if len(shape) != 3:
                raise SpecError(f"layers[{i}] maxpool2d needs a [channels, height, width] input, got {shape}")
            size = _positive(layer, i, "size")
            c, h, w = shape
            if h // size < 1 or w // size < 1:
                raise SpecError(f"layers[{i}] maxpool2d size {size} does not fit a {h}x{w} input")
            modules.append(nn.MaxPool2d(size))
            shape = [c, h // size, w // size]
        elif kind == "flatten":
            modules.append(nn.Flatten())
            shape = [math.prod(shape)]
        elif kind == "relu":
            modules.append(nn.ReLU())
        elif kind == "softmax":
            if i != len(layer_specs) - 1:
                raise SpecError(f"layers[{i}] softmax is allowed only as the last layer")
            modules.append(nn.Softmax(dim=1) if softmax == "softmax" else nn.Identity())
        else:
            raise SpecError(f"layers[{i}].type is {kind!r}, not one of dense, conv2d, maxpool2d, flatten, relu, softmax")
    if classes is None or len(shape) != 1 or shape[0] != classes:
        raise SpecError("the last parameterized layer must be a dense layer giving the class logits")
    return CohortModel(nn.Sequential(*modules), input_shape, classes)


def load_weights(model, tensors):
    """Loads a {name: numpy array} dict into `model`, strictly: every tensor present, none extra,
    shapes equal. Raises SpecError naming the tensor."""
    state = model.state_dict()
    missing = [n for n in state if n not in tensors]
    extra = [n for n in tensors if n not in state]
    if missing or extra:
        raise SpecError(f"tensors do not match the model: missing {missing}, unexpected {extra}")
    loaded = {}
    for name, expected in state.items():
        array = tensors[name]
        if tuple(array.shape) != tuple(expected.shape):
            raise SpecError(f"tensor {name!r} has shape {list(array.shape)}, the model expects {list(expected.shape)}")
        loaded[name] = torch.from_numpy(array.astype("float32", copy=False))
    model.load_state_dict(loaded, strict=True)


def model_tensors(model):
    """The model's parameters as (name, float32 numpy array) pairs, in state-dict order (layer order,
    weight before bias), as Cohort lays them out."""
    return [(name, t.detach().cpu().float().numpy()) for name, t in model.state_dict().items()]
