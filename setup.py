"""The one compiled extension, ``animkit._native``, built where a C compiler is present (optional: without it
animkit runs the same kernels through numba, or NumPy): the kernels a fresh process needs from its first call (the
BVH scanner, forward kinematics), so that no JIT start-up stalls it."""

import sys

from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off"]  # no FMA: each product rounds alone
setup(ext_modules=[Extension("animkit._native", ["animkit/_native.c"], optional=True, extra_compile_args=flags,
                             libraries=[] if sys.platform == "win32" else ["m"])])
