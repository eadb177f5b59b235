"""Process settings of the package: ``bdpd_jax.configure()`` applies them, each only where
the user has not set it. Importing ``bdpd_jax`` changes nothing in the process; the ``bdpd``
CLI and the benches call ``configure()`` first (docs/semantics/performance.md, "Process
settings"). A user's own ``XLA_FLAGS`` and ``EQX_ON_ERROR`` always win.

XLA's CPU backend in jaxlib 0.10 routes some fusions to YNNPACK, which runs the short
per-player reductions of this game ~20x slower; an empty fusion-type list turns that off.
Copy insertion by region analysis keeps the turn loop's carried buffers from being copied
every turn (bench/HISTORY.md has the figures for both). XLA reads ``XLA_FLAGS`` when jax
starts its backend (the first computation), equinox reads ``EQX_ON_ERROR`` when imported:
``configure()`` must come before both.

glibc's malloc hands a freed block of a few MiB back to the system and page-faults it in
afresh at the next run (a history run of the seed's payload returns ~9 MB of records: ~2,300
faults, a fifth of its CPU time); ``configure()`` asks it to keep such blocks for reuse
(:func:`keep_freed_memory`), unless the user set glibc's malloc options themselves.
"""

from __future__ import annotations

import ctypes
import os
import sys
import warnings

YNN_OFF = "--xla_cpu_experimental_ynn_fusion_type="
# Copy insertion by region analysis: the turn loop's carried buffers are updated in place
# instead of copied first (7 copies a turn -> 2 in the chunk program, ~9 % less time per
# turn at B = 16384; the same numbers: copies move no arithmetic; bench/README.md).
COPY_REGIONS = "--xla_cpu_copy_insertion_use_region_analysis=true"
XLA_DEFAULTS = f"{YNN_OFF} {COPY_REGIONS}"


# glibc malloc options (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, and the values set
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20  # blocks below 32 MiB come from the heap (glibc's own dynamic ceiling)
TRIM_THRESHOLD = 128 << 20  # up to 128 MiB of free heap top is kept rather than returned
MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed blocks below 32 MiB and up to 128 MiB of free heap
    for reuse (``mallopt``); True when set. XLA allocates a run's output buffers with malloc:
    by default glibc returns a freed multi-MiB block to the system, so every history run
    page-faults its records in again (bench/README.md, "History on the seed's payload").
    Nothing when the user set glibc's malloc options (``MALLOC_*_`` or ``GLIBC_TUNABLES``
    naming ``glibc.malloc``) or the C library is not glibc."""
    if sys.platform != "linux" or any(k in os.environ for k in MALLOC_ENV):
        return False
    if "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: musl has no tunable mallopt)
    except (OSError, AttributeError):
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def apply_env() -> None:
    """Set ``XLA_FLAGS`` and ``EQX_ON_ERROR`` where unset (``configure`` is the public call)."""
    if "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = XLA_DEFAULTS
    # equinox's runtime checks (eqx.error_if inside diffrax) cost ~2 us per Seneca turn and
    # their host callbacks keep the persistent compilation cache from storing the program;
    # "nan" turns a failed check into NaNs instead. Nothing is lost: diffeqsolve runs with
    # throw=False and the Seneca engine flags failure per arena from ``sol.result`` and a
    # finiteness test (bench/README.md). Read once when equinox is imported, so it must be
    # set before that; a user's own EQX_ON_ERROR always wins.
    os.environ.setdefault("EQX_ON_ERROR", "nan")


def enable_compile_cache(path: str | None = None) -> None:
    """Turn on JAX's persistent compilation cache (a warm compile then costs a fraction)."""
    import jax  # only now: the module is imported before apply_env() sets XLA_FLAGS for jax

    path = path or os.environ.get("BDPD_JAX_CACHE", os.path.expanduser("~/.cache/bdpd_jax/xla"))
    try:
        os.makedirs(path, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    except OSError:
        pass  # a read-only home only costs compile time


def configure(*, compile_cache: bool | str = False) -> dict[str, str]:
    """Apply the package's process settings (where unset) and return the values in force.

    ``compile_cache=True`` (or a folder) also turns on JAX's persistent compilation cache.
    glibc's malloc is asked to keep freed memory for reuse (:func:`keep_freed_memory`).
    Settings read at import by another library (``EQX_ON_ERROR`` by equinox) only take effect
    if this runs before that library is first imported: a warning says when it came too late.
    """
    late = "equinox" in sys.modules and "EQX_ON_ERROR" not in os.environ
    apply_env()
    keep_freed_memory()
    if late:
        warnings.warn(
            "bdpd_jax.configure(): equinox was imported before it, so EQX_ON_ERROR=nan applies to new "
            "processes only; call bdpd_jax.configure() before importing bdpd_jax's kernels or equinox",
            RuntimeWarning,
            stacklevel=2,
        )
    if compile_cache:
        enable_compile_cache(compile_cache if isinstance(compile_cache, str) else None)
    return {k: os.environ.get(k, "") for k in ("XLA_FLAGS", "EQX_ON_ERROR")}
