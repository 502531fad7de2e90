"""Screenshots of four quality reports (issue 17), taken in headless Chromium, for ``docs/``.

- RTE (Snow et al. 2008), ``crowdbayes report labels --dataset rte --model hierarchical``
  (the expert gold of the set scores it);
- car choice (McFadden & Train 2000), ``PlackettLuceVI(eta="auto")``, features standardised;
- one UKPConvArg fold (the first topic of UKPConvArgCrowdSample, Simpson & Gurevych 2018),
  ``GPPL`` on the topic's arguments described by their MiniLM sentence embeddings;
- pinwheel clustering (Luo et al. 2018, §5.1), ``BayesSCDC`` with the settings of
  ``benchmarks/cluster/cluster_pinwheel.py`` (seed 0).

Each report is built by ``crowdbayes.report.build`` (the RTE one through the command line),
saved as HTML under ``--work`` and photographed whole-page at 1200 px wide; the PNGs are
reduced to 256 colours and written to ``docs/report_<name>.png``. A report of the timings and
checks (console errors, network requests, figures drawn) goes to
``benchmarks/report/results/report_screenshots.md``.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/report/report_screenshots.py
    .venv/bin/python benchmarks/report/report_screenshots.py --only rte pinwheel
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np  # noqa: E402

from _common import (  # noqa: E402
    REPO,
    load_average,
    resolve_data_root,
    results_dir,
    write_markdown_report,
)

sys.path.insert(0, str(REPO / "tests"))  # the Chromium driver of the report tests

from chromium import open_page  # noqa: E402

RESULTS = results_dir(__file__)

DOCS = REPO / "docs"


def rte(work: Path) -> tuple[Path, str]:
    out = work / "rte.html"
    command = [str(Path(sys.executable).parent / "crowdbayes"), "report", "labels"]
    command += ["--dataset", "rte", "--model", "hierarchical", "--seed", "0", "--out", str(out)]
    command += ["--no-progress"]
    printed = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return out, printed.strip()


def fit_and_build(model, fit_args: tuple, data, out: Path, source: str, **options) -> str:
    """Fit, build the report of the fit on ``data``, save it to ``out``; the timings."""
    from crowdbayes.report import build

    start = time.perf_counter()
    model.fit(*fit_args)
    seconds = time.perf_counter() - start
    built = time.perf_counter()
    build(model, data, source=source, fit_seconds=seconds, **options).save(out)
    return f"fit {seconds:.1f} s, report {time.perf_counter() - built:.1f} s"


def car_choice(work: Path) -> tuple[Path, str]:
    from crowdbayes import PlackettLuceVI, Rankings
    from crowdbayes.datasets import load_car_choice

    data = load_car_choice()
    items = (data.items - data.items.mean()) / data.items.std().replace(0.0, 1.0)
    rankings = Rankings(data.rankings, items)
    out = work / "car_choice.html"
    model = PlackettLuceVI(eta="auto")
    return out, fit_and_build(model, (rankings,), rankings, out, "car choice (standardised)")


def ukpconvarg(work: Path) -> tuple[Path, str]:
    from crowdbayes import GPPL, Comparisons
    from crowdbayes.datasets import load_ukpconvarg

    data = load_ukpconvarg("crowdsample", embed=True)
    topic = data.topics[0]
    pairs = data.pairs[data.pairs["topic"] == topic][["worker", "left", "right", "label"]]
    arguments = data.arguments.index[data.arguments["topic"] == topic]
    features = data.features.loc[arguments]
    comparisons = Comparisons(pairs.reset_index(drop=True), items=features)
    out = work / "ukpconvarg_gppl.html"
    with warnings.catch_warnings(record=True) as notes:  # the dropped ties, for the report
        warnings.simplefilter("always")
        timings = fit_and_build(
            GPPL(random_state=0),
            (comparisons,),
            comparisons,
            out,
            f"UKPConvArgCrowdSample fold {topic!r}",
            notes=notes,
        )
    return out, timings


def pinwheel(work: Path) -> tuple[Path, str]:
    from crowdbayes.datasets.clustering import make_pinwheel, simulate_pair_links
    from crowdbayes.metrics.clustering import unsupervised_accuracy
    from crowdbayes.models.clustering.deep import BayesSCDC

    X, y = make_pinwheel(random_state=0)
    annotated = np.random.default_rng(0).choice(len(X), size=100, replace=False)
    sim = simulate_pair_links(
        y, n_workers=20, pairs_per_worker=49, alpha=0.9, beta=0.9, items=annotated, random_state=0
    )
    links = sim.to_links(observations=X)
    model = BayesSCDC(
        n_clusters=15,
        latent_dim=2,
        hidden=(40, 40),
        decoder="gaussian",
        epochs=100,
        batch_size=50,
        warmup_epochs=20,
        n_init=3,
        random_state=0,
    )
    out = work / "pinwheel.html"
    source = "the pinwheel (5 arms x 100 points, 980 links)"
    timings = fit_and_build(model, (X, links), links, out, source)
    accuracy = unsupervised_accuracy(y, model.assignments_.to_numpy())
    return out, f"{timings}, accuracy {accuracy:.3f}"


CASES = {
    "rte": rte,
    "car_choice": car_choice,
    "ukpconvarg_gppl": ukpconvarg,
    "pinwheel": pinwheel,
}


def shrink(path: Path) -> None:
    """256 colours: a third of the size, text unchanged to the eye."""
    from PIL import Image

    image = Image.open(path).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(CASES), default=list(CASES))
    parser.add_argument("--work", type=Path, default=None, help="where the HTML reports go")
    parser.add_argument("--output", type=Path, default=RESULTS / "report_screenshots.md")
    args = parser.parse_args()
    resolve_data_root()
    work = args.work or Path(tempfile.mkdtemp(prefix="crowdbayes-reports-"))
    work.mkdir(parents=True, exist_ok=True)
    lines = [
        "| report | what was run | HTML (MB) | page height (px) | figures | console errors | "
        "network requests | screenshot |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in args.only:
        html, what = CASES[name](work)
        png = DOCS / f"report_{name}.png"
        png.parent.mkdir(parents=True, exist_ok=True)
        page = open_page(html, screenshot=png)
        shrink(png)
        drawn = [f["name"] for f in page.figures if f["complete"] and f["width"] > 0]
        lines.append(
            f"| {name} | {what.replace('|', '/')} | {html.stat().st_size / 1e6:.2f} | "
            f"{page.height} | {len(drawn)} of {len(page.figures)}: {', '.join(drawn)} | "
            f"{len(page.console_errors)} | {len(page.requests)} | "
            f"`{png.relative_to(REPO)}` ({png.stat().st_size / 1e3:.0f} kB) |"
        )
        print(lines[-1], flush=True)
    lines += ["", f"- load average at the end {load_average()}"]
    write_markdown_report(args.output, "Quality report screenshots (issue 17)", lines)


if __name__ == "__main__":
    main()
