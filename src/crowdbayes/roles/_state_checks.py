"""Checks of a loaded model's contents: a model file that reads cleanly may still have been
edited (a NaN confusion matrix, a probability table of the wrong width, a string ``max_iter``,
an attribute no fit sets). :func:`restore` builds the estimator from what
:func:`crowdbayes.persistence.read_model_file` returned and refuses, with one ``ValueError``
naming the file, anything a fit could not have produced:

- **parameters**: exactly the names of the class's ``__init__``, each within the class's
  ``parameter_constraints`` (:meth:`crowdbayes.base.Estimator.check_params` of the base, which
  needs nothing but the values; the checks a subclass adds, such as whether CUDA is present,
  are left to the next ``fit``);
- **state names**: identifiers that are not parameters, not transient caches, not methods or
  properties of the class, and that the package's code refers to somewhere (an attribute name
  ``evil_`` that no code sets is refused);
- **diagnostics**: the convergence facts (iterations, converged, bounds) are numbers or True /
  False;
- **contents, by role** (dispatched on the role base, so the model modules need no change):
  the results each role promises (:mod:`crowdbayes.roles`) have the right types, finite
  values where the role needs them, probabilities in [0, 1] that sum to one per row, and
  shapes consistent with the declared classes, workers, tasks and items; the per-worker
  arrays that a warm start or ``partial_fit`` indexes by worker have one row per worker.
"""

from __future__ import annotations

import copy
import functools
import inspect
import numbers
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..base import Estimator, OptionalResult, _declared
from ..persistence import one_line
from .clusters import Clusterer
from .items import ItemScorer
from .labels import LabelAggregator
from .values import ValueAggregator

__all__ = ["restore", "check_contents"]

#: tolerance on probabilities: in [-TOL, 1 + TOL], rows summing to 1 within PROBA_SUM_TOL
TOL = 1e-9
PROBA_SUM_TOL = 1e-6


class _Refused(ValueError):
    """A content check failed (the message says what; :func:`restore` adds the file)."""


def restore(cls: type[Estimator], params: dict, state: dict, path: Any) -> Estimator:
    """The estimator ``cls(**params)`` with ``state`` set, every check of the module docstring
    passed; anything else raises one ``ValueError`` naming ``path``."""
    # a file written before a parameter existed was fitted as the model that value gives
    params = {**{k: v for k, v in cls._added_params.items() if k not in params}, **params}
    try:
        check_param_names(cls, params)
        model = cls(**params)
        Estimator.check_params(model)
        check_state_names(cls, state)
        check_networks(model, state)
        model._set_state(state)
        check_contents(model)
    except Exception as err:  # noqa: BLE001 - a forged state may trip anything in a model
        what = str(err) if isinstance(err, _Refused) else f"{type(err).__name__}: {err}"
        raise ValueError(
            f"{path}: the model file is damaged or was edited ({one_line(what)})"
        ) from None
    return model


# ------------------------------------------------------------------------------ names
def check_param_names(cls: type[Estimator], params: dict) -> None:
    """The parameters are exactly those of ``cls.__init__``."""
    names = cls._param_names()
    extra = [str(k) for k in params if k not in names]
    missing = [name for name in names if name not in params]
    if extra or missing:
        raise _Refused(
            f"{cls.__name__} parameters: unknown {extra[:5]}, missing {missing[:5]}"
            if extra
            else f"{cls.__name__} parameters: missing {missing[:5]}"
        )


@functools.cache
def _referenced_names() -> frozenset[str]:
    """Every name the package's code uses as an attribute (``.name``) or quotes (``"name"``):
    the names a fit can set. Empty where the sources are not installed (the check is then
    skipped)."""
    names: set[str] = set()
    for file in Path(__file__).parents[1].rglob("*.py"):
        try:
            text = file.read_text(encoding="utf-8")
        except OSError:
            continue
        names.update(_ATTRIBUTE.findall(text))
        names.update(_QUOTED.findall(text))
    return frozenset(names)


_ATTRIBUTE = re.compile(r"\.([A-Za-z_]\w*)")
_QUOTED = re.compile(r"[\"']([A-Za-z_]\w*)[\"']")


def check_state_names(cls: type[Estimator], state: dict) -> None:
    """Every state entry is one a fit of ``cls`` can set (module docstring)."""
    params = set(cls._param_names())
    known = _referenced_names()
    for name in state:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
            raise _Refused(f"a state entry named {str(name)[:60]!r}")
        if name in params or name in cls._transient:
            raise _Refused(f"the state holds {name!r}, which a fit does not save")
        try:
            declared = inspect.getattr_static(cls, name)
        except AttributeError:
            declared = None
        if declared is not None and (
            callable(declared) or hasattr(declared, "__get__") or isinstance(declared, property)
        ):
            if not isinstance(declared, OptionalResult):
                raise _Refused(f"the state would replace {cls.__name__}.{name}")
        if known and name not in known:
            raise _Refused(f"the state holds {name!r}, which no {cls.__name__} fit sets")


# ------------------------------------------------------------------------------ networks
def check_networks(model: Estimator, state: dict) -> None:
    """For a model of neural networks (a class with ``_networks``, rebuilt by
    ``_make_networks`` from its parameters and the stored ``obs_shape_`` before the stored
    weights are loaded): the networks those would build have exactly the stored weights'
    shapes. They are built on torch's ``meta`` device, which allocates nothing, so that a
    forged width (``hidden=(10**9,)``, an ``obs_shape_`` of 10**12) is refused before the
    model allocates it."""
    names = getattr(type(model), "_networks", ())
    if not names:
        return
    import torch

    shape = state.get("obs_shape_")
    if not (isinstance(shape, tuple) and all(type(n) is int and n > 0 for n in shape)):
        raise _Refused(f"obs_shape_ is {shape!r:.60}, not a shape")
    probe = copy.copy(model)
    vars(probe).update({k: v for k, v in state.items() if k not in names})
    with torch.device("meta"):
        networks = probe._make_networks(int(np.prod(shape)))
    for name, network in zip(names, networks, strict=True):
        stored = state.get(name)
        if network is None:
            continue
        if not isinstance(stored, dict):
            raise _Refused(f"{name} holds no weights")
        expected = {key: tuple(value.shape) for key, value in network.state_dict().items()}
        found = {key: tuple(getattr(value, "shape", ())) for key, value in stored.items()}
        if found != expected:
            raise _Refused(f"the weights of {name} do not fit the networks its parameters build")
        for key, value in stored.items():
            if not isinstance(value, torch.Tensor) or not value.dtype.is_floating_point:
                raise _Refused(f"{name}[{key!r}] is not a tensor of floats")


# ------------------------------------------------------------------------------ contents
#: role base -> the check of its results (filled below)
_ROLE_CHECKS: list[tuple[type, Callable[[Any], None]]] = []


def check_contents(model: Estimator) -> None:
    """The fitted results of ``model`` are consistent (module docstring)."""
    if not model.is_fitted():
        raise _Refused("no fitted state")
    _check_diagnostics(model)
    for role, check in _ROLE_CHECKS:
        if isinstance(model, role):
            check(model)
    for name, inner in vars(model).items():  # a model kept inside (the one a chooser chose)
        if isinstance(inner, Estimator):
            try:
                Estimator.check_params(inner)  # a parameter missing: AttributeError
                check_state_names(type(inner), inner._get_state())
                check_contents(inner)
            except _Refused as err:
                raise _Refused(f"{name}: {err}") from None


def _check_diagnostics(model: Estimator) -> None:
    for key, attribute in _declared(type(model), "_diagnostics").items():
        value = getattr(model, attribute, None)
        if value is None:
            continue
        ok = isinstance(value, (bool, np.bool_)) or (
            isinstance(value, numbers.Real) and not isinstance(value, (str, bytes))
        )
        if not ok:
            raise _Refused(f"{attribute} ({key}) is {type(value).__name__} {value!r:.40}")
        if key in ("iterations", "chains", "sweeps", "draws", "warmup", "restarts") and not (
            isinstance(value, numbers.Integral) and value >= 0
        ):
            raise _Refused(f"{attribute} ({key}) is {value!r:.40}, not a count")


def _typed(model: Any, name: str, kind: type | tuple[type, ...]) -> Any:
    value = getattr(model, name)
    if not isinstance(value, kind):
        raise _Refused(f"{name} is a {type(value).__name__}")
    return value


def _numbers(name: str, values: Any, *, finite: bool = True, low=None, high=None) -> np.ndarray:
    """``values`` as a float array, refused unless numeric (and finite, within bounds)."""
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        raise _Refused(f"{name} holds {array.dtype} values, not numbers")
    array = array.astype(np.float64, copy=False)
    if np.isnan(array).any() or (finite and not np.isfinite(array).all()):
        raise _Refused(f"{name} holds NaN or infinite values")
    if low is not None and (array < low).any():
        raise _Refused(f"{name} holds values below {low:g}")
    if high is not None and (array > high).any():
        raise _Refused(f"{name} holds values above {high:g}")
    return array


def _probabilities(name: str, frame: Any, rows_sum_to_one: bool = True) -> np.ndarray:
    array = _numbers(name, frame, low=-TOL, high=1 + TOL)
    if rows_sum_to_one and array.size:
        sums = array.reshape(len(array), -1).sum(axis=1)
        if np.abs(sums - 1).max() > PROBA_SUM_TOL:
            raise _Refused(f"the rows of {name} do not sum to 1")
    return array


def _unique_index(name: str, index: Any) -> pd.Index:
    if not isinstance(index, pd.Index):
        raise _Refused(f"{name} is a {type(index).__name__}, not an index")
    if not index.is_unique:
        raise _Refused(f"{name} holds duplicate entries")
    return index


def _same_length(name: str, value: Any, expected: int, of: str) -> None:
    if len(value) != expected:
        raise _Refused(f"{name} has {len(value)} rows for {expected} {of}")


def _same_index(name: str, value: Any, other_name: str, other: Any) -> None:
    """``value`` is indexed by the same ids as ``other`` (an index, or a table's index)."""
    index = other if isinstance(other, pd.Index) else other.index
    if not value.index.equals(index):
        raise _Refused(f"{name} is not indexed as {other_name} is")


def _check_labels(model: Any) -> None:
    """Class labels: classes, task posteriors, prevalence, confusion, per-worker arrays."""
    classes = _unique_index("classes_", model.classes_)
    if len(classes) < 1:
        raise _Refused("classes_ is empty")
    if "probas_" in vars(model) or "tasks_path_" not in vars(model):  # else: fitted on Dask,
        _check_task_posteriors(model, classes)  # the tasks' posteriors written to files
    prevalence = getattr(model, "prevalence_", None)
    if prevalence is not None:
        _same_length("prevalence_", prevalence, len(classes), "classes")
        _probabilities("prevalence_", np.asarray(prevalence)[None, :])
    confusion = getattr(model, "confusion_", None)
    if confusion is not None:
        _typed(model, "confusion_", pd.DataFrame)
        _probabilities("confusion_", confusion, rows_sum_to_one=False)
        if not set(confusion.columns) <= set(classes):
            raise _Refused("confusion_ has columns that are not among classes_")
    counts = getattr(model, "worker_label_counts_", None)
    if counts is not None:
        _numbers("worker_label_counts_", counts, low=0)
    _check_worker_arrays(model, len(classes))


def _check_task_posteriors(model: Any, classes: pd.Index) -> None:
    probas = _typed(model, "probas_", pd.DataFrame)
    if list(probas.columns) != list(classes):
        raise _Refused(f"probas_ has {probas.shape[1]} columns for {len(classes)} classes")
    _probabilities("probas_", probas)
    labels = _typed(model, "labels_", pd.Series)
    _same_index("labels_", labels, "probas_", probas)
    if not labels.dropna().isin(classes).all():
        raise _Refused("labels_ holds labels that are not among classes_")


def _check_worker_arrays(model: Any, n_classes: int) -> None:
    """The arrays a warm start or ``partial_fit`` indexes by worker (the ``globals_`` and
    ``stats_`` of a model fitted by its statistics): one row per worker of ``workers_``, a
    K × K confusion per worker, and no NaN (infinities only in log arrays)."""
    state = vars(model)
    if state.get("globals_") is None:
        return
    workers = _unique_index("workers_", state.get("workers_"))
    per_worker = set(getattr(model, "primary", ())[:1]) | set(getattr(model, "worker_stats", ()))
    for part in ("globals_", "stats_"):
        values = state.get(part)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise _Refused(f"{part} is a {type(values).__name__}")
        for key, array in values.items():
            where = f"{part}[{key!r}]"
            array = _numbers(where, array, finite=not str(key).startswith("log"))
            if key in per_worker:
                if array.ndim == 0 or array.shape[0] != len(workers):
                    raise _Refused(f"{where} has shape {array.shape} for {len(workers)} workers")
            if key == "confusion" and array.shape[1:] != (n_classes, n_classes):
                raise _Refused(f"{where} has shape {array.shape} for {n_classes} classes")
    exact = getattr(model, "_check_shapes", None)  # the model's own, where it has one
    if exact is not None:
        exact("loaded")


def _check_values(model: Any) -> None:
    """Numeric answers: each task's posterior, each worker's bias and noise."""
    values = _typed(model, "values_", pd.DataFrame)
    if "mean" not in values.columns:
        raise _Refused("values_ has no mean column")
    _numbers("values_['mean']", values["mean"])
    workers = _typed(model, "worker_params_", pd.DataFrame)
    for column in ("bias", "noise_sd"):
        if column in workers.columns:
            _numbers(f"worker_params_[{column!r}]", workers[column])


def _check_items(model: Any) -> None:
    """Item scores: one finite ``mean`` (and non-negative ``sd``) per fitted item."""
    items = _unique_index("item_ids_", model.item_ids_)
    utility = _typed(model, "utility_", pd.DataFrame)
    _same_index("utility_", utility, "item_ids_", items)
    if "mean" not in utility.columns:
        raise _Refused("utility_ has no mean column")
    _numbers("utility_['mean']", utility["mean"])
    if "sd" in utility.columns:
        _numbers("utility_['sd']", utility["sd"], low=0)


def _check_predicts(model: Any) -> None:
    """The model predicts for every one of its items, each paired with the next (what the
    arrays of the model-specific posterior — item features, kernels, inducing points,
    per-worker factors — are read by: a file whose arrays disagree on the number of items
    fails here, not at the user's first prediction)."""
    ids = model.item_ids_
    if len(ids) >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                probability = model.predict_proba(ids[:-1], ids[1:])
            except (IndexError, KeyError) as err:
                raise _Refused(f"its arrays disagree on the items ({type(err).__name__})") from None
        _probabilities("the predicted probability", np.asarray(probability), False)


def _check_clusters(model: Any) -> None:
    """Clusters: each item's cluster and posterior cluster probabilities."""
    probas = _typed(model, "probas_", pd.DataFrame)
    _probabilities("probas_", probas)
    assignments = _typed(model, "assignments_", pd.Series)
    _same_index("assignments_", assignments, "probas_", probas)
    codes = _numbers("assignments_", assignments, low=0)
    if (codes != np.round(codes)).any():
        raise _Refused("assignments_ holds clusters that are not whole numbers")
    used = model.n_clusters_used_
    if not isinstance(used, numbers.Integral) or used < 0:
        raise _Refused(f"n_clusters_used_ is {used!r:.40}")
    shape = vars(model).get("obs_shape_")
    if model.tags.new_items and shape is not None:  # the networks run on one blank item
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.predict(np.zeros((1, int(np.prod(shape)))))


_ROLE_CHECKS.extend(
    [
        (LabelAggregator, _check_labels),
        (ValueAggregator, _check_values),
        (ItemScorer, _check_items),
        (ItemScorer, _check_predicts),
        (Clusterer, _check_clusters),
    ]
)
