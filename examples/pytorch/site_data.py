"""Loads a site's OWN data from files named on the command line, and splits it deterministically.

Sources (one of):
  --csv site.csv --label-column label [--features a,b,c]   (header row; features default to every
                                                            other column; values must be numbers)
  --npy-features x.npy --npy-labels y.npy                   (x: [rows, ...] numbers; y: [rows])

Labels are class indices 0 .. classes-1 (integers; 3.0 is read as 3). Rows are split into training
and validation rows by a seeded permutation (--seed, --validation-fraction), so the same files and
flags give the same split on every call: the training row count is the site's FedAvg weight and
must not change between calls.

Also here: the exact feature statistics of the training rows (feature_totals, for federated
standardization) and the standardization the agent hands over (standardize).
"""

import csv
from dataclasses import dataclass

import numpy as np


# Fixed point of the federated statistics (src/protocol/statistics-lanes.ts): a feature value x
# counts as q = round(x * 2^12); |x| may be at most 2^40, so q is an exact double (|q| <= 2^52).
STATISTICS_FRACTION_BITS = 12
STATISTICS_MAX_ABS = 2.0**40


class DataError(ValueError):
    """The site's files cannot be used; the message names the file, row and column."""


@dataclass
class SiteData:
    train_x: np.ndarray  # float32 [rows, features]
    train_y: np.ndarray  # int64 [rows]
    validation_x: np.ndarray
    validation_y: np.ndarray
    classes: int  # labels are 0 .. classes-1

    @property
    def features(self):
        """Features per row (the flattened width of a row)."""
        return int(self.train_x.shape[1])


def add_data_arguments(parser):
    group = parser.add_argument_group("site data")
    group.add_argument("--csv", help="CSV file with a header row")
    group.add_argument("--label-column", help="CSV column holding the class index")
    group.add_argument("--features", help="comma-separated CSV feature columns (default: all but the label)")
    group.add_argument("--npy-features", help=".npy array of features, one row per example")
    group.add_argument("--npy-labels", help=".npy array of class indices, one per example")
    group.add_argument("--classes", type=int, help="number of classes (default: largest label + 1)")
    group.add_argument(
        "--validation-fraction", type=float, default=0.2, help="share of rows held out for evaluate (default 0.2)"
    )
    group.add_argument("--seed", type=int, default=0, help="seed of the train/validation split (default 0)")


def _labels(values, source):
    y = np.asarray(values, dtype=np.float64)
    if y.ndim != 1:
        raise DataError(f"{source}: labels must be one value per row, got shape {list(y.shape)}")
    bad = np.flatnonzero(~np.isfinite(y) | (y < 0) | (y != np.round(y)))
    if bad.size:
        raise DataError(f"{source}: label of row {int(bad[0])} is {y[bad[0]]!r}, must be a class index 0, 1, 2, ...")
    return y.astype(np.int64)


def _read_csv(path, label_column, features):
    if not label_column:
        raise DataError("--csv needs --label-column")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise DataError(f"{path}: empty file, expected a header row") from None
        if label_column not in header:
            raise DataError(f"{path}: no column {label_column!r} (columns: {', '.join(header)})")
        names = [c.strip() for c in features.split(",")] if features else [c for c in header if c != label_column]
        for name in names:
            if name not in header:
                raise DataError(f"{path}: no feature column {name!r}")
        columns = [header.index(n) for n in names]
        label_at = header.index(label_column)
        rows, labels = [], []
        for line, record in enumerate(reader, start=2):
            if not record or all(not cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                raise DataError(f"{path}:{line}: {len(record)} fields, the header has {len(header)}")
            try:
                rows.append([float(record[c]) for c in columns])
            except ValueError:
                bad = next(n for n, c in zip(names, columns) if not _is_number(record[c]))
                raise DataError(f"{path}:{line}: column {bad!r} is {record[header.index(bad)]!r}, not a number") from None
            try:
                labels.append(float(record[label_at]))
            except ValueError:
                raise DataError(f"{path}:{line}: label {record[label_at]!r} is not a class index") from None
    x = np.asarray(rows, dtype=np.float32).reshape(len(rows), len(names))
    return x, _labels(labels, path)


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _read_npy(features_path, labels_path):
    if not labels_path:
        raise DataError("--npy-features needs --npy-labels")
    x = np.load(features_path, allow_pickle=False)
    y = _labels(np.load(labels_path, allow_pickle=False), labels_path)
    if x.ndim < 1 or x.shape[0] != y.shape[0]:
        raise DataError(f"{features_path}: {x.shape[0] if x.ndim else 0} rows, {labels_path} has {y.shape[0]}")
    return x.reshape(x.shape[0], -1).astype(np.float32), y


def load_site_data(args):
    """The SiteData of the parsed arguments (see add_data_arguments)."""
    if args.csv and args.npy_features:
        raise DataError("give either --csv or --npy-features, not both")
    if args.csv:
        x, y = _read_csv(args.csv, args.label_column, args.features)
    elif args.npy_features:
        x, y = _read_npy(args.npy_features, args.npy_labels)
    else:
        raise DataError("no site data: give --csv FILE --label-column NAME, or --npy-features X --npy-labels Y")
    if not np.all(np.isfinite(x)):
        row = int(np.flatnonzero(~np.all(np.isfinite(x), axis=1))[0])
        raise DataError(f"features of row {row} are not all finite")
    largest = int(y.max()) if y.size else -1
    classes = args.classes if args.classes is not None else max(2, largest + 1)
    if largest >= classes:
        raise DataError(f"label {largest} is out of range for {classes} classes")
    if not 0 <= args.validation_fraction < 1:
        raise DataError(f"--validation-fraction is {args.validation_fraction}, must be in [0, 1)")
    order = np.random.default_rng(args.seed).permutation(len(y))
    held_out = int(len(y) * args.validation_fraction)
    validation, train = order[:held_out], order[held_out:]
    if train.size == 0:
        raise DataError(f"no training rows: {len(y)} rows, validation fraction {args.validation_fraction}")
    return SiteData(x[train], y[train], x[validation], y[validation], classes)


def feature_totals(x):
    """The exact fixed-point sums of the rows `x` ([rows, features]), as Python ints:
    (rows, positive, negative, squares) with, per feature j and q = round(x * 2^12) (nearest, halves
    toward +infinity, as JavaScript's Math.round), positive[j] = sum of q >= 0, negative[j] = sum of
    -q for q < 0, squares[j] = sum of q * q. The same numbers as featureTotals in TypeScript, for
    the same float32 values.
    """
    x = np.asarray(x)
    if x.ndim != 2:
        raise DataError(f"feature statistics need rows of features, got shape {list(x.shape)}")
    v = x.astype(np.float64)  # float32 -> float64 is exact
    bad = ~np.isfinite(v) | (np.abs(v) > STATISTICS_MAX_ABS)
    if bad.any():
        row, column = (int(i[0]) for i in np.nonzero(bad))
        raise DataError(
            f"row {row} feature {column} is {v[row, column]!r}: federated statistics take finite values"
            f" up to 2^40 in magnitude"
        )
    v = v * (1 << STATISTICS_FRACTION_BITS)  # exact: a power of two
    q = np.floor(v)
    q += v - q >= 0.5  # v - floor(v) is exact, so this is round-half-up exactly
    q = q.astype(np.int64)  # |q| <= 2^52: exact
    rows, features = q.shape
    peak = int(np.abs(q).max()) if q.size else 0
    if peak < 1 << 31:
        # int64 sums over `chunk` rows cannot overflow: chunk * peak^2 < 2^63.
        chunk = max(1, ((1 << 63) - 1) // max(1, peak * peak))
    else:
        q = q.astype(object)  # Python ints: exact at any size (slow; only for huge values)
        chunk = max(1, rows)
    positive, negative, squares = [0] * features, [0] * features, [0] * features
    for start in range(0, rows, chunk):
        part = q[start : start + chunk]
        sums = (
            np.where(part > 0, part, 0).sum(axis=0),
            np.where(part < 0, -part, 0).sum(axis=0),
            (part * part).sum(axis=0),
        )
        for total, partial in zip((positive, negative, squares), sums):
            for j in range(features):
                total[j] += int(partial[j])
    return rows, positive, negative, squares


def standardize(x, mean, std):
    """(x - mean) / std per feature, computed in float64 and stored as float32 (as the agent does)."""
    mean = np.asarray(mean, dtype=np.float64)
    std = np.asarray(std, dtype=np.float64)
    if x.ndim != 2 or mean.shape != (x.shape[1],) or std.shape != mean.shape:
        raise DataError(
            f"the standardization has {mean.size} means and {std.size} deviations, the rows have"
            f" {x.shape[1] if x.ndim == 2 else '?'} features"
        )
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)):
        raise DataError("the standardization must have finite means and finite deviations > 0")
    out = ((x.astype(np.float64) - mean) / std).astype(np.float32)
    if not np.all(np.isfinite(out)):
        raise DataError("standardized features overflow float32")
    return out
