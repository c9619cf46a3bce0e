#!/usr/bin/env python3
"""A Cohort external trainer in PyTorch: the trainer side of docs/trainer-protocol.md.

The site agent runs
    <command...> /path/to/call-folder/request.json
for each call (describe, statistics, train, evaluate) and waits for this process to write result.json (and,
for train, result.safetensors) next to the request and exit 0. The site's data comes from its own
files, named in the command (see site_data.py), e.g.

    ["/usr/bin/python3", "examples/pytorch/cohort_trainer.py",
     "--csv", "site.csv", "--label-column", "label"]

Any failure is a message on stderr and a nonzero exit; the agent reports the end of stderr.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.dont_write_bytecode = True  # no __pycache__ beside the example (often a read-only checkout)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetensors_io  # noqa: E402
from cohort_model import SpecError, build_model, load_weights, model_tensors  # noqa: E402
from site_data import DataError, add_data_arguments, feature_totals, load_site_data, standardize  # noqa: E402

PROTOCOL = "cohort-trainer/1"
EVAL_BATCH = 1024


class RequestError(ValueError):
    """request.json is not a request this trainer can serve."""


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_arguments(parser)
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument(
        "--stop-at-deadline",
        action="store_true",
        help="stop training early when settings.deadlineUnixMs has passed (default: train all epochs)",
    )
    parser.add_argument("request", help="request.json path (the agent appends it)")
    return parser.parse_args(argv)


def local_file(folder, request, field):
    """The path of the file the request names in `field`: a plain name inside the call folder."""
    name = request.get(field)
    if not isinstance(name, str) or not name or os.path.basename(name) != name or name in (".", ".."):
        raise RequestError(f"request.json: {field} is {name!r}, must be a file name in the call folder")
    return os.path.join(folder, name)


def write_json(path, value):
    """Writes JSON whole or not at all; NaN and Infinity are refused (they are not JSON)."""
    temp = f"{path}.{os.getpid()}.tmp"
    with open(temp, "w", encoding="utf-8") as f:
        json.dump(value, f, allow_nan=False)
        f.write("\n")
    os.replace(temp, path)


def standardization_from(value, field, features):
    """The standardization the request carries in `field` as (mean, std) lists, or None when absent."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RequestError(f"request.json: {field} must be an object {{mean, std}}")
    parts = []
    for name in ("mean", "std"):
        numbers = value.get(name)
        if not isinstance(numbers, list) or len(numbers) != features:
            raise RequestError(
                f"request.json: {field}.{name} must be a list of {features} numbers (the rows' features)"
            )
        for i, v in enumerate(numbers):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise RequestError(f"request.json: {field}.{name}[{i}] is {v!r}, must be a finite number")
            if name == "std" and not v > 0:
                raise RequestError(f"request.json: {field}.std[{i}] is {v!r}, must be > 0")
        parts.append([float(v) for v in numbers])
    return tuple(parts)


def rows_for(x, standardization):
    """The rows `x`, standardized when the agent handed over a standardization."""
    return x if standardization is None else standardize(x, *standardization)


def statistics(data):
    """The exact fixed-point sums of the training rows (before any standardization), as decimal strings."""
    rows, positive, negative, squares = feature_totals(data.train_x)
    return {
        "rows": str(rows),
        "positive": [str(v) for v in positive],
        "negative": [str(v) for v in negative],
        "squares": [str(v) for v in squares],
    }


def model_from_request(folder, request):
    model = build_model(request.get("model"))
    tensors, _ = safetensors_io.load(local_file(folder, request, "input"))
    load_weights(model, tensors)
    return model


def as_batch(model, x):
    """Rows of flat features as a [rows, *input_shape] tensor."""
    features = math.prod(model.input_shape)
    if x.shape[1] != features:
        raise DataError(
            f"the site's rows have {x.shape[1]} features, the model's input {list(model.input_shape)} needs {features}"
        )
    return torch.from_numpy(np.ascontiguousarray(x)).reshape(x.shape[0], *model.input_shape)


def check_labels(model, y):
    if y.size and int(y.max()) >= model.classes:
        raise DataError(f"label {int(y.max())} is out of range: the model has {model.classes} classes")
    return torch.from_numpy(y)


def train(folder, request, data, args):
    settings = request.get("settings")
    if not isinstance(settings, dict):
        raise RequestError("request.json: settings must be an object")
    try:
        lr, batch, epochs = float(settings["learningRate"]), int(settings["batchSize"]), int(settings["epochs"])
        mu, seed = float(settings.get("proximalMu", 0)), int(settings["shuffleSeed"])
    except (KeyError, TypeError, ValueError) as e:
        raise RequestError(f"request.json: settings are incomplete or not numbers ({e!r})") from e
    if not (lr > 0 and batch >= 1 and epochs >= 1 and mu >= 0):
        raise RequestError(f"request.json: settings out of range: {settings}")
    deadline_ms = settings.get("deadlineUnixMs")
    standardization = standardization_from(settings.get("standardization"), "settings.standardization", data.features)
    model = model_from_request(folder, request)
    x, y = as_batch(model, rows_for(data.train_x, standardization)), check_labels(model, data.train_y)

    torch.manual_seed(seed)
    global_weights = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    steps, seen, loss_total = 0, 0, 0.0
    n = x.shape[0]
    past_deadline = False
    for _ in range(epochs):
        if past_deadline:
            break
        order = torch.randperm(n)
        for start in range(0, n, batch):
            if args.stop_at_deadline and deadline_ms is not None and steps > 0 and time.time() * 1000 >= deadline_ms:
                print(f"cohort_trainer: deadline reached after {steps} steps; stopping early", file=sys.stderr)
                past_deadline = True
                break
            rows = order[start : start + batch]
            cross_entropy = loss_fn(model(x[rows]), y[rows])
            loss = cross_entropy
            if mu > 0:
                proximal = sum(((p - g) ** 2).sum() for p, g in zip(model.parameters(), global_weights))
                loss = loss + (mu / 2) * proximal
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            seen += len(rows)
            loss_total += cross_entropy.item() * len(rows)

    mean_loss = loss_total / seen if seen else 0.0
    tensors = model_tensors(model)
    if not math.isfinite(mean_loss) or not all(np.all(np.isfinite(a)) for _, a in tensors):
        raise DataError("training diverged (non-finite loss or weights); lower the learning rate")
    safetensors_io.save(
        local_file(folder, request, "output"),
        tensors,
        {"format": "pt", "cohort_protocol": PROTOCOL, "cohort_round": str(settings.get("round", ""))},
    )
    return {"examples": int(n), "meanLoss": mean_loss, "steps": steps}


def evaluate(folder, request, data):
    standardization = standardization_from(request.get("standardization"), "standardization", data.features)
    model = model_from_request(folder, request)
    x, y = as_batch(model, rows_for(data.validation_x, standardization)), check_labels(model, data.validation_y)
    if x.shape[0] == 0:
        raise DataError("no validation rows (--validation-fraction 0?)")
    model.eval()
    loss_sum, predictions = 0.0, []
    with torch.no_grad():
        for start in range(0, x.shape[0], EVAL_BATCH):
            logits = model(x[start : start + EVAL_BATCH])
            loss_sum += nn.functional.cross_entropy(
                logits.double(), y[start : start + EVAL_BATCH], reduction="sum"
            ).item()
            predictions.append(logits.argmax(dim=1))
    predicted = torch.cat(predictions).numpy()
    truth = y.numpy()
    classes = model.classes
    confusion = np.bincount(truth * classes + predicted, minlength=classes * classes).reshape(classes, classes)
    return {
        "examples": int(x.shape[0]),
        "lossSum": loss_sum,
        "correct": int(np.trace(confusion)),
        "confusion": confusion.tolist(),
    }


def main(argv=None):
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    request_path = os.path.abspath(args.request)
    folder = os.path.dirname(request_path)
    try:
        with open(request_path, encoding="utf-8") as f:
            request = json.load(f)
        if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
            raise RequestError(f"request.json: protocol must be {PROTOCOL!r}")
        action = request.get("action")
        data = load_site_data(args)
        if action == "describe":
            result = {
                "examples": int(data.train_y.shape[0]),
                "validationExamples": int(data.validation_y.shape[0]),
                "classes": data.classes,
                "features": data.features,
            }
        elif action == "statistics":
            result = statistics(data)
        elif action == "train":
            result = train(folder, request, data, args)
        elif action == "evaluate":
            result = evaluate(folder, request, data)
        else:
            raise RequestError(f"request.json: action {action!r} is not describe, statistics, train or evaluate")
        write_json(local_file(folder, request, "result"), {"protocol": PROTOCOL, **result})
    except (RequestError, DataError, SpecError, safetensors_io.SafetensorsFormatError, OSError) as e:
        print(f"cohort_trainer: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
