"""Files the library reads and writes: configs read with a size bound, metadata written
atomically and read back through a pydantic model, parquet reads that name their file.

Every error about a file names the file (a cut ``gen-00001.parquet``, a ``manifest.json``
that is not JSON, a ``meta.json`` whose ``names`` is not a list), and a loader never follows
a path found inside a file: a field that should hold a config holds a JSON object or nothing.
docs/semantics/records.md, "Files the library writes", records these choices.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

#: the largest config file (JSON) a run reads: a 1024-player config with long prompts is far below
MAX_CONFIG_BYTES: int = 16 << 20
#: the largest metadata file (manifest.json, meta.json) a loader reads: a config and a few lists
MAX_META_BYTES: int = 64 << 20

M = TypeVar("M", bound=BaseModel)


class Meta(BaseModel):
    """Base of the metadata models: keys other than the declared ones are kept as they are
    (a newer writer may add some), the declared ones are validated."""

    model_config = ConfigDict(extra="allow")


def read_text(path: str | os.PathLike[str], limit: int, what: str = "file") -> str:
    """The UTF-8 text of ``path``; ValueError naming the file when it is missing, larger than
    ``limit`` bytes (never read whole: the size is asked first and at most ``limit + 1``
    bytes are read, so a file growing meanwhile is caught too) or not UTF-8."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(limit + 1) if size <= limit else b""
    except FileNotFoundError:
        raise ValueError(f"{what}: no such file {str(p)!r}") from None
    except IsADirectoryError:
        raise ValueError(f"{what}: {str(p)!r} is a directory, not a file") from None
    if size > limit or len(data) > limit:
        raise ValueError(f"{what}: {str(p)!r} is larger than the limit of {limit:,} bytes ({max(size, len(data)):,})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{what}: {str(p)!r} is not UTF-8 text ({e.reason} at byte {e.start})") from None


def load_meta(path: str | os.PathLike[str], model: type[M], limit: int = MAX_META_BYTES) -> M:
    """A metadata file read (bounded) and validated by ``model``; ValueError naming the file
    and, for a wrong field, the field and what it holds."""
    p = Path(path)
    text = read_text(p, limit, p.name)
    try:
        return model.model_validate_json(text)
    except ValidationError as e:
        raise ValueError(f"{str(p)!r}: {_first_error(e)}") from None


def _first_error(e: ValidationError) -> str:
    """One line: the first problem pydantic found (its field path, message and input)."""
    err = e.errors(include_url=False)[0]
    if err["type"] == "json_invalid":
        return f"not valid JSON ({err['ctx'].get('error', err['msg'])})" if "ctx" in err else "not valid JSON"
    loc = ".".join(str(x) for x in err["loc"]) or "(the whole file)"
    got = repr(err.get("input"))
    return f"{loc}: {err['msg']}, got {got[:80] + '...' if len(got) > 80 else got}"


def fsync_path(path: Path, *, tolerant: bool = False) -> None:
    """fsync a file or directory by its path (a new descriptor flushes its pages whoever wrote
    them); a missing path is skipped. ``tolerant``: where fsync is unsupported (some
    directories), skip instead of raising."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    except OSError:
        if tolerant:
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not tolerant:
            raise
    finally:
        os.close(fd)


def write_json(
    path: str | os.PathLike[str],
    obj: Any,
    *,
    indent: int | None = 2,
    mkdir: bool = True,
    default: Callable[[Any], Any] | None = str,
    allow_nan: bool = True,
) -> None:
    """Write ``obj`` as JSON to ``path`` atomically: a temp file in the same folder
    (``.<name>.*.tmp``), fsynced, then ``os.replace``d over the target, so a reader sees the
    old file or the new one, never a torn one. ``mkdir=False``: the folder must exist."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if mkdir:
        directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, indent=indent, default=default, allow_nan=allow_nan)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_path(directory, tolerant=True)  # a rename inside it is durable


def read_parquet(path: str | os.PathLike[str], **kwargs: Any) -> Any:
    """``pandas.read_parquet(path)``; a damaged or foreign file is a ValueError naming it."""
    import pandas as pd  # (start-up time: only when results are read)

    try:
        return pd.read_parquet(path, **kwargs)
    except FileNotFoundError:
        raise ValueError(f"{str(path)!r}: no such file") from None
    except (OSError, ValueError, TypeError) as e:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"{str(path)!r}: not a readable parquet file ({str(e).splitlines()[0][:200]})") from None


__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_META_BYTES",
    "Meta",
    "read_text",
    "load_meta",
    "write_json",
    "fsync_path",
    "read_parquet",
]
