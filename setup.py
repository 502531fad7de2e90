"""The one compiled piece of crowdbayes: the fused E+M pass of the confusion-matrix label models
(src/crowdbayes/annotators/_confusion_kernel.c). Everything else is in pyproject.toml.

The extension is optional: without a C compiler the install goes on without it, and
``crowdbayes.annotators.confusion_pass`` falls back to the numpy code (same results, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "crowdbayes.annotators._confusion_kernel",
            sources=["src/crowdbayes/annotators/_confusion_kernel.c"],
            extra_compile_args=["-O3", "-pthread"],
            extra_link_args=["-pthread"],
            optional=True,
        )
    ]
)
