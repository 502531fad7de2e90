"""Crowd clustering data: loaders for ``CROWDBAYES_DATA/clustering`` and seeded generators.

On disk (see each folder's ``SOURCE.txt`` for provenance, licence and citation)::

    <root>/clustering/cmu_faces_32x30/<person>/<person>_<pose>_<expression>_<eyes>_4.pgm
    <root>/clustering/mnist/t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz,
                            train-labels-idx1-ubyte.gz
    <root>/clustering/semicrowd_mnist/crowd_annotations_mnist.npy   rows [i, j, worker, label]

Generators: the pinwheel of Johnson et al. (2016) used in the toy experiment of Luo et al.
(2018, §5.1), and two simulators of crowd links under the two-coin model
(:mod:`crowdbayes.annotators.two_coin`): random pairs per worker, and annotation tasks in which a
worker sorts a random set of items into groups (the scheme of the real MNIST annotations).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator
from ..data.links import Links
from .loaders import DATA_ENV_VAR, data_root
from .prefs import _source_text

__all__ = [
    "REAL_ALPHA_PRIOR",
    "REAL_BETA_PRIOR",
    "FaceImages",
    "MNISTImages",
    "SemicrowdMNIST",
    "SyntheticLinks",
    "load_cmu_faces",
    "load_mnist_test",
    "load_mnist_train_labels",
    "load_semicrowd_mnist",
    "make_pinwheel",
    "simulate_pair_links",
    "simulate_link_tasks",
    "task_groupings",
]

_CLUSTERING = "clustering"
#: Beta distributions matched (method of moments) to the 48 workers' sensitivity α and
#: specificity β measured against the true digits in ``semicrowd_mnist`` (mean α 0.978,
#: sd 0.050; mean β 0.991, sd 0.026; most workers are perfect, a few are poor).
REAL_ALPHA_PRIOR = (7.66, 0.174)
REAL_BETA_PRIOR = (12.14, 0.112)


def _clustering_dir(name: str, *files: str) -> Path:
    """``<root>/clustering/<name>``, with an error naming what to set when a file is absent."""
    root = data_root()
    if root is None:
        raise FileNotFoundError(
            f"{name}: {DATA_ENV_VAR} is not set; set it to the folder holding {_CLUSTERING}/{name}/"
        )
    folder = root / _CLUSTERING / name
    for file in files or ("",):
        if not (folder / file).exists():
            raise FileNotFoundError(
                f"{name}: {folder / file} not found under {DATA_ENV_VAR}={str(root)!r}"
            )
    return folder


# ------------------------------------------------------------------------------ CMU faces
def _read_pgm(path: Path) -> np.ndarray:
    """A binary (P5) PGM image as a (height, width) uint8 array."""
    data = path.read_bytes()
    fields, pos = [], 0
    while len(fields) < 4:  # magic, width, height, maxval; '#' starts a comment
        while data[pos : pos + 1].isspace():
            pos += 1
        if data[pos : pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end : end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P5" or int(fields[3]) > 255:
        raise ValueError(f"{path}: not an 8-bit binary PGM (P5) image")
    width, height = int(fields[1]), int(fields[2])
    pixels = np.frombuffer(data, dtype=np.uint8, count=width * height, offset=pos + 1)
    return pixels.reshape(height, width)


@dataclass(frozen=True, eq=False)
class FaceImages:
    """The CMU face images at 32×30 (Mitchell 1997; UCI "CMU Face Images").

    Attributes
    ----------
    images : ndarray of uint8, shape (624, 30, 32)
        Grey levels, rows = image height 30, columns = width 32.
    info : DataFrame
        One row per image: ``person, pose`` (straight, left, right, up), ``expression``
        (neutral, happy, sad, angry), ``eyes`` (open, sunglasses) parsed from the file name,
        and ``file``.
    source : str
        The text of ``SOURCE.txt``.
    """

    images: np.ndarray = field(repr=False)
    info: pd.DataFrame = field(repr=False)
    source: str = field(default="", repr=False)

    def features(self) -> np.ndarray:
        """Images flattened to (624, 960) and scaled to [0, 1] per image (min–max), the
        preprocessing of the MCVC/SCDC experiments."""
        flat = self.images.reshape(len(self.images), -1).astype(np.float64)
        low, high = flat.min(axis=1, keepdims=True), flat.max(axis=1, keepdims=True)
        return (flat - low) / np.maximum(high - low, 1e-12)


def load_cmu_faces() -> FaceImages:
    """Read the 624 good 32×30 CMU face images (the 16 corrupt ``.bad`` shots are absent)."""
    folder = _clustering_dir("cmu_faces_32x30")
    paths = sorted(folder.glob("*/*_4.pgm"))
    if not paths:
        raise FileNotFoundError(f"cmu_faces_32x30: no *_4.pgm images under {folder}")
    rows = []
    for path in paths:
        parts = path.stem.split("_")
        if len(parts) != 5:
            raise ValueError(f"cmu_faces_32x30: unexpected file name {path.name}")
        rows.append(dict(zip(("person", "pose", "expression", "eyes"), parts[:4], strict=True)))
        rows[-1]["file"] = str(path.relative_to(folder))
    images = np.stack([_read_pgm(p) for p in paths])
    return FaceImages(images, pd.DataFrame(rows), _source_text(folder))


# ------------------------------------------------------------------------------ MNIST
def _read_idx(path: Path) -> np.ndarray:
    """An IDX file (LeCun's MNIST format; gzipped) of unsigned bytes."""
    with gzip.open(path, "rb") as handle:
        data = handle.read()
    if data[:2] != b"\x00\x00" or data[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * d : 8 + 4 * d], "big") for d in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


@dataclass(frozen=True, eq=False)
class MNISTImages:
    """MNIST digits (LeCun et al. 1998).

    Attributes
    ----------
    images : ndarray of uint8, shape (n, 28, 28)
    labels : ndarray of int64, shape (n,)
    source : str
    """

    images: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    source: str = field(default="", repr=False)


def load_mnist_test() -> MNISTImages:
    """The 10,000 MNIST test images and their labels."""
    images_file, labels_file = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
    folder = _clustering_dir("mnist", images_file, labels_file)
    images = _read_idx(folder / images_file)
    labels = _read_idx(folder / labels_file).astype(np.int64)
    if len(images) != len(labels):
        raise ValueError(f"mnist: {len(images)} test images but {len(labels)} labels")
    return MNISTImages(images, labels, _source_text(folder))


def load_mnist_train_labels() -> np.ndarray:
    """The 60,000 MNIST training labels, in the original training order (the index space of
    the ``semicrowd_mnist`` annotations). The training images are not available here."""
    name = "train-labels-idx1-ubyte.gz"
    return _read_idx(_clustering_dir("mnist", name) / name).astype(np.int64)


# ------------------------------------------------------------------- real MNIST crowd links
@dataclass(frozen=True, eq=False)
class SemicrowdMNIST:
    """Real crowd links on MNIST training images (Luo et al. 2018).

    48 workers each sorted sets of 36 images into groups (91 tasks, one worker each), giving
    every pair of a task a link: 57,330 links over 2,759 distinct images.

    Attributes
    ----------
    links : DataFrame
        Columns ``worker, left, right, label, task``: ``left``/``right`` index the MNIST
        training set (original order), ``task`` numbers the 630-row blocks of the file.
    digits : Series
        The true digit of every linked image (index: image index, name ``"digit"``), from the
        MNIST training labels, for scoring.
    source : str
    """

    links: pd.DataFrame = field(repr=False)
    digits: pd.Series = field(repr=False)
    source: str = field(default="", repr=False)

    def to_links(self, **kwargs) -> Links:
        """The links as a validated :class:`~crowdbayes.data.links.Links`.

        One worker judged one pair twice (in two tasks, with the same answer); the default
        ``duplicates="keep"`` counts both judgments (and warns), as the authors' code does.
        Keyword arguments go to ``Links``.
        """
        kwargs.setdefault("duplicates", "keep")
        return Links(self.links, **kwargs)


_ROWS_PER_TASK = 630  # C(36, 2): every pair of a task's 36 images


def load_semicrowd_mnist() -> SemicrowdMNIST:
    """Read ``semicrowd_mnist/crowd_annotations_mnist.npy`` with the MNIST training labels."""
    name = "crowd_annotations_mnist.npy"
    folder = _clustering_dir("semicrowd_mnist", name)
    rows = np.load(folder / name, allow_pickle=False)
    if rows.ndim != 2 or rows.shape[1] != 4:
        raise ValueError(f"semicrowd_mnist: expected rows [i, j, worker, label]; got {rows.shape}")
    links = pd.DataFrame(
        {
            "worker": rows[:, 2],
            "left": rows[:, 0],
            "right": rows[:, 1],
            "label": rows[:, 3],
            "task": np.arange(len(rows)) // _ROWS_PER_TASK,
        }
    )
    truth = load_mnist_train_labels()
    items = np.unique(rows[:, :2])
    digits = pd.Series(truth[items], index=pd.Index(items, name="item"), name="digit")
    return SemicrowdMNIST(links, digits, _source_text(folder))


def task_groupings(links: pd.DataFrame, task: str = "task") -> pd.Series:
    """Each worker's own grouping within each task: the connected components of the task's
    must-links (for a worker who sorted items into groups these are the groups).

    Returns a Series of group numbers indexed by ``(task, item)``.
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    parts = []
    for task_id, block in links.groupby(task, sort=True):
        codes, items = pd.factorize(np.concatenate([block["left"], block["right"]]))
        half = len(block)
        must = block["label"].to_numpy() == 1
        graph = sp.coo_matrix(
            (np.ones(must.sum()), (codes[:half][must], codes[half:][must])),
            shape=(len(items), len(items)),
        )
        _, groups = connected_components(graph, directed=False)
        index = pd.MultiIndex.from_arrays([[task_id] * len(items), items], names=[task, "item"])
        parts.append(pd.Series(groups, index=index, name="group"))
    return pd.concat(parts)


# ------------------------------------------------------------------------------ generators
def make_pinwheel(
    n_clusters: int = 5,
    n_per_cluster: int = 100,
    *,
    radial_std: float = 0.3,
    tangential_std: float = 0.05,
    rate: float = 0.25,
    random_state: RandomState = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The pinwheel data of Johnson et al. (2016), as in Luo et al. (2018, §5.1).

    Each cluster is a Gaussian blob at (1, 0) with standard deviations ``(radial_std,
    tangential_std)``, bent by rotating every point by ``rate · exp(x₁)`` and turned to its arm
    angle ``2πk / n_clusters``; the result is scaled by 10. Defaults are the paper's (5 × 100).

    Returns
    -------
    X : ndarray, shape (n_clusters · n_per_cluster, 2)
    y : ndarray of int, the arm of each point (points are shuffled)
    """
    rng = as_generator(random_state)
    n = n_clusters * n_per_cluster
    arms = np.linspace(0, 2 * np.pi, n_clusters, endpoint=False)
    features = rng.standard_normal((n, 2)) * np.array([radial_std, tangential_std])
    features[:, 0] += 1.0
    labels = np.repeat(np.arange(n_clusters), n_per_cluster)
    angles = arms[labels] + rate * np.exp(features[:, 0])
    cos, sin = np.cos(angles), np.sin(angles)
    points = np.stack(
        [features[:, 0] * cos + features[:, 1] * sin, -features[:, 0] * sin + features[:, 1] * cos],
        axis=1,
    )
    order = rng.permutation(n)
    return 10.0 * points[order], labels[order]


@dataclass(eq=False)
class SyntheticLinks:
    """Simulated links and the truth behind them.

    Attributes
    ----------
    links : DataFrame
        Columns ``worker, left, right, label`` (and ``task`` for task simulations).
    truth : Series
        The true cluster of every item the simulator could draw (index: item id).
    alpha, beta : ndarray, shape (n_workers,)
        Each worker's sensitivity and specificity (worker ids are ``0 … n_workers−1``).
    """

    links: pd.DataFrame = field(repr=False)
    truth: pd.Series = field(repr=False)
    alpha: np.ndarray
    beta: np.ndarray

    def to_links(self, **kwargs) -> Links:
        """The links as a validated :class:`~crowdbayes.data.links.Links`.

        In task simulations a worker can meet the same pair in two tasks; the default
        ``duplicates="keep"`` keeps both judgments. Keyword arguments go to ``Links``.
        """
        kwargs.setdefault("duplicates", "keep")
        return Links(self.links, **kwargs)


def _worker_accuracies(value, prior, n_workers: int, name: str, rng) -> np.ndarray:
    if value is None:
        return rng.beta(*prior, size=n_workers)
    out = np.broadcast_to(np.asarray(value, dtype=np.float64), (n_workers,)).copy()
    if not np.all((out >= 0) & (out <= 1)):
        raise ValueError(f"{name} must lie in [0, 1]; got {value!r}")
    return out


def _as_truth(truth) -> pd.Series:
    series = truth if isinstance(truth, pd.Series) else pd.Series(np.asarray(truth))
    if series.index.has_duplicates:
        raise ValueError("truth: item ids repeat")
    if series.isna().any():
        raise ValueError("truth: missing clusters")
    return series


def _distinct_pairs(draw, count: int, rng) -> np.ndarray:
    """``count`` distinct unordered pairs (rows ``i < j``) by rejection from ``draw(size)``,
    in random order."""
    pairs = np.empty((0, 2), dtype=np.int64)
    while len(pairs) < count:
        pairs = np.unique(np.concatenate([pairs, draw(2 * count)]), axis=0)
    return pairs[rng.permutation(len(pairs))[:count]]


def _uniform_pairs(n: int, size: int, rng, codes=None) -> np.ndarray:
    """About ``size`` random pairs ``i < j`` of ``n`` items; with ``codes`` (cluster codes)
    only the pairs whose clusters differ."""
    draw = np.sort(rng.integers(n, size=(size, 2)), axis=1)
    draw = draw[draw[:, 0] != draw[:, 1]]
    if codes is not None:
        draw = draw[codes[draw[:, 0]] != codes[draw[:, 1]]]
    return draw


def _same_cluster_pairs(codes: np.ndarray, size: int, rng) -> np.ndarray:
    """``size`` pairs drawn uniformly among the same-cluster pairs: a cluster with probability
    proportional to its number of pairs, then two distinct members."""
    members = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    n_pairs = counts * (counts - 1) / 2.0
    cluster = rng.choice(len(counts), size=size, p=n_pairs / n_pairs.sum())
    first = rng.integers(counts[cluster])
    second = rng.integers(counts[cluster] - 1)
    second += second >= first
    pairs = np.stack([members[starts[cluster] + first], members[starts[cluster] + second]], 1)
    return np.sort(pairs, axis=1)


def _check_balanced_capacity(codes: np.ndarray, pairs_per_worker: int) -> None:
    counts = np.bincount(codes)
    n_same = int((counts * (counts - 1) // 2).sum())
    n_all = len(codes) * (len(codes) - 1) // 2
    want_same = pairs_per_worker // 2
    if want_same > n_same or pairs_per_worker - want_same > n_all - n_same:
        raise ValueError(
            f"balanced=True needs {want_same} same-cluster and {pairs_per_worker - want_same} "
            f"different-cluster pairs per worker; the items offer {n_same} and {n_all - n_same}"
        )


def _two_coin_draw(same: np.ndarray, alpha: np.ndarray, beta: np.ndarray, rng) -> np.ndarray:
    """Must-link with probability α on same-cluster pairs and 1 − β on the others."""
    p_must = np.where(same, alpha, 1.0 - beta)
    return (rng.random(same.shape) < p_must).astype(np.int64)


def _sorted_groups(clusters: np.ndarray, accuracy: float, rng) -> np.ndarray:
    """A worker's grouping of one task's items: each item in its cluster's group with
    probability ``accuracy``, else in the group of another cluster of the task (uniformly), or
    alone (a new group) when the task holds one cluster only."""
    groups = pd.factorize(clusters)[0]
    present = np.unique(groups)
    for i in np.flatnonzero(rng.random(len(groups)) >= accuracy):
        others = present[present != groups[i]]
        groups[i] = rng.choice(others) if len(others) else len(clusters) + i
    return groups


def simulate_pair_links(
    truth,
    *,
    n_workers: int,
    pairs_per_worker: int,
    alpha=0.9,
    beta=0.9,
    items=None,
    balanced: bool = False,
    random_state: RandomState = None,
) -> SyntheticLinks:
    """Each worker judges ``pairs_per_worker`` distinct random pairs under the two-coin model.

    Parameters
    ----------
    truth : Series or array
        True cluster of every item (index: item ids; an array's ids are its positions).
    n_workers, pairs_per_worker : int
    alpha, beta : float, array of shape (n_workers,), or None
        Sensitivity P(must-link | same) and specificity P(cannot-link | different) of each
        worker; None draws them from :data:`REAL_ALPHA_PRIOR` / :data:`REAL_BETA_PRIOR`.
    items : sequence, optional
        The item ids pairs are drawn from (default all of ``truth``; the paper's pinwheel
        annotates 100 of 500 points).
    balanced : bool
        False (default): pairs uniformly at random (with few clusters most are
        different-cluster pairs). True: half of each worker's pairs (rounded down) are drawn
        uniformly among the same-cluster pairs and the rest among the different-cluster pairs,
        the protocol of MCVC used for the UCI/faces experiments of Luo et al. (2018, §5.2:
        "the number of ML constraints equals to the number of CL constraints", before noise).
    random_state : seed
    """
    rng = as_generator(random_state)
    truth = _as_truth(truth)
    pool = truth.index.to_numpy() if items is None else np.asarray(items)
    n = len(pool)
    if n < 2 or pairs_per_worker > n * (n - 1) // 2:
        raise ValueError(f"cannot draw {pairs_per_worker} distinct pairs from {n} items")
    if balanced:
        codes = pd.factorize(truth.loc[pool].to_numpy())[0]
        _check_balanced_capacity(codes, pairs_per_worker)
    alpha = _worker_accuracies(alpha, REAL_ALPHA_PRIOR, n_workers, "alpha", rng)
    beta = _worker_accuracies(beta, REAL_BETA_PRIOR, n_workers, "beta", rng)
    frames = []
    for worker in range(n_workers):
        if balanced:
            n_same = pairs_per_worker // 2
            pairs = np.concatenate(
                [
                    _distinct_pairs(
                        lambda size: _same_cluster_pairs(codes, size, rng), n_same, rng
                    ),
                    _distinct_pairs(
                        lambda size: _uniform_pairs(n, size, rng, codes),
                        pairs_per_worker - n_same,
                        rng,
                    ),
                ]
            )
            pairs = pairs[rng.permutation(len(pairs))]
        else:
            pairs = _distinct_pairs(
                lambda size: _uniform_pairs(n, size, rng), pairs_per_worker, rng
            )
        left, right = pool[pairs[:, 0]], pool[pairs[:, 1]]
        same = truth.loc[left].to_numpy() == truth.loc[right].to_numpy()
        label = _two_coin_draw(same, alpha[worker], beta[worker], rng)
        frames.append(
            pd.DataFrame({"worker": worker, "left": left, "right": right, "label": label})
        )
    return SyntheticLinks(pd.concat(frames, ignore_index=True), truth, alpha, beta)


def simulate_link_tasks(
    truth,
    *,
    n_tasks: int = 91,
    items_per_task: int = 36,
    n_workers: int = 48,
    alpha=None,
    beta=None,
    sort: bool = False,
    random_state: RandomState = None,
) -> SyntheticLinks:
    """Annotation tasks in the scheme of the real MNIST annotations: each task shows one worker
    ``items_per_task`` random items and records a link for every pair of them.

    Tasks go to workers so that each worker gets at least one (while tasks last) and the rest
    at random. By default each link follows the two-coin model independently, so a simulated
    worker's links need not form a consistent grouping, unlike a real worker's sorting (and an
    error in one link is outvoted by the item's other links in the same task). With
    ``sort=True`` the worker sorts the task's items into groups instead: each item goes to the
    group of its own cluster with probability α of the worker, else to the group of another
    cluster present in the task (uniformly; alone when there is none), and the links are every
    pair of that grouping (must-link within a group), so a misplaced item's links all agree
    with the wrong group; β is then unused (returned as NaN). The defaults (91 tasks × 36
    items, 48 workers, α and β drawn to match the real workers' spread) mimic
    ``semicrowd_mnist``.
    """
    rng = as_generator(random_state)
    truth = _as_truth(truth)
    pool = truth.index.to_numpy()
    if items_per_task < 2 or items_per_task > len(pool):
        raise ValueError(f"items_per_task must lie in [2, {len(pool)}]; got {items_per_task}")
    alpha = _worker_accuracies(alpha, REAL_ALPHA_PRIOR, n_workers, "alpha", rng)
    beta = _worker_accuracies(beta, REAL_BETA_PRIOR, n_workers, "beta", rng)
    first = rng.permutation(n_workers)[:n_tasks]
    workers = np.concatenate([first, rng.integers(n_workers, size=max(n_tasks - n_workers, 0))])
    upper_left, upper_right = np.triu_indices(items_per_task, k=1)
    frames = []
    for task, worker in enumerate(workers):
        chosen = pool[rng.choice(len(pool), size=items_per_task, replace=False)]
        left, right = chosen[upper_left], chosen[upper_right]
        if sort:
            groups = _sorted_groups(truth.loc[chosen].to_numpy(), alpha[worker], rng)
            label = (groups[upper_left] == groups[upper_right]).astype(np.int64)
        else:
            same = truth.loc[left].to_numpy() == truth.loc[right].to_numpy()
            label = _two_coin_draw(same, alpha[worker], beta[worker], rng)
        frames.append(
            pd.DataFrame(
                {"worker": worker, "left": left, "right": right, "label": label, "task": task}
            )
        )
    if sort:
        beta = np.full(n_workers, np.nan)
    return SyntheticLinks(pd.concat(frames, ignore_index=True), truth, alpha, beta)
