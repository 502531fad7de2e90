"""The compiled pieces of crowdbayes: the fused E+M pass of the confusion-matrix label models
(src/crowdbayes/annotators/_confusion_kernel.c), the pairwise MM sums of PlackettLuceMM
(src/crowdbayes/models/plackett_luce/_pair_kernel.c), the reader of identifier columns of
plain CSV/TSV files (src/crowdbayes/data/_csv_ids.c) and the VB sweeps of LinkClustering
(src/crowdbayes/models/clustering/_link_kernel.c). Everything else is in pyproject.toml.

The extensions are optional: without a C compiler the install goes on without them, and
``crowdbayes.annotators.confusion_pass`` and ``crowdbayes.models.plackett_luce._set_sums`` fall
back to the numpy code (same results to rounding, slower), ``crowdbayes.data.io`` to pandas'
reader (the same tables, slower), ``crowdbayes.models.clustering.link_vb.run_link_vb`` to the
numpy sweeps (same results to rounding, slower).
"""

from setuptools import Extension, setup

#: the buffer-size check the three numeric kernels share (shipped with them)
BUFFER_CHECK = "src/crowdbayes/_buffer_check.h"

setup(
    ext_modules=[
        Extension(
            "crowdbayes.annotators._confusion_kernel",
            sources=["src/crowdbayes/annotators/_confusion_kernel.c"],
            depends=[BUFFER_CHECK],
            extra_compile_args=["-O3", "-pthread"],
            extra_link_args=["-pthread"],
            optional=True,
        ),
        Extension(
            "crowdbayes.models.plackett_luce._pair_kernel",
            sources=["src/crowdbayes/models/plackett_luce/_pair_kernel.c"],
            depends=[BUFFER_CHECK],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(
            "crowdbayes.data._csv_ids",
            sources=["src/crowdbayes/data/_csv_ids.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(
            "crowdbayes.models.clustering._link_kernel",
            sources=["src/crowdbayes/models/clustering/_link_kernel.c"],
            depends=[BUFFER_CHECK],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ]
)
