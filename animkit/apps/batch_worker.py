"""What every ``animkit batch`` task needs, loaded once, before the local workers exist.

``run_batch`` starts its LocalCluster's workers from a forkserver that imports this module first: dask.distributed
(the worker itself), animkit's readers, writers and renderer, Pillow and tqdm, and the compiled BVH scanner
(numba's on-disk cache; not when the batch runs its workers without numba, see ``batch.SCANNER_PAYS_BYTES``).
The forkserver does it while the driver is still importing dask and starting the scheduler, so the two run side
by side, and each worker is then forked with all of it in memory instead of importing it again before its first
task (≈1–1.5 s a worker: benchmarks/results_batch.md). Importing this module has that effect and no other.
"""

from __future__ import annotations

import distributed  # noqa: F401  the worker process runs dask.distributed's Worker
import distributed.nanny  # noqa: F401
import distributed.worker  # noqa: F401

from animkit.io import bvh, save  # noqa: F401
from animkit.jit import enabled, native_kernels
from animkit.render import frames, placed, writers  # noqa: F401  render's modules, imported lazily by the task otherwise


def warm() -> None:
    """Load what the first task would load: Pillow's GIF writer, tqdm, and the compiled BVH scanner."""
    import tqdm  # noqa: F401  render_clip builds a (disabled) progress bar
    from PIL import GifImagePlugin, Image, PngImagePlugin  # noqa: F401

    if native_kernels() is None and enabled():  # the scanner built at install needs no loading
        bvh.load_scanner()  # numba's cache load (frames_compiled alone runs it only where a read pays)


warm()
