"""The model file of the embedded backend: which GGUF, where it is, and fetching it once.

The embedded backend (``lreact.engines.embedded``) runs llama.cpp inside the notebook's own process on a
GGUF file: the weights, the tokenizer and the model's chat template in one file (lecture Part IV,
"System prompt, chat template and statelessness": the template is part of the model).

- ``LREACT_GGUF=/path/model.gguf`` selects any local GGUF file;
- otherwise the course's default model, named here once (``DEFAULT_GGUF_REPO`` and
  ``DEFAULT_GGUF_FILE``: Qwen2.5 0.5B Instruct, Q4_K_M), is taken from the Hugging Face cache, or
  fetched into it with ``huggingface_hub`` on first use (progress bar, resumable);
- ``LREACT_FETCH_MODEL=0`` (or ``HF_HUB_OFFLINE=1``) forbids the download: then a missing file is
  a plain message saying what to download and where to put it.

While an assignment is graded (``LREACT_GRADING=1``, set by ``autograder/run/pool.py``) no model is
ever located or loaded: graded tests use scripted models (``autograder/README.md``).

``python -m lreact.engines.gguf`` fetches the default model (``make lab`` runs it; it never fails the
set-up when offline).
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
from dataclasses import dataclass

from .models import ModelError

# The one place the embedded backend's default model is named (README, "The model").
DEFAULT_GGUF_REPO = "Qwen/Qwen2.5-0.5B-Instruct-GGUF"
DEFAULT_GGUF_FILE = "qwen2.5-0.5b-instruct-q4_k_m.gguf"
DEFAULT_GGUF_SIZE = "about 490 MB"
GGUF_ENV_VAR = "LREACT_GGUF"
FETCH_ENV_VAR = "LREACT_FETCH_MODEL"


class ModelFileError(ModelError):
    """No usable GGUF file: the message says what to download and where to put it."""


@dataclass(frozen=True)
class ModelFile:
    path: str
    source: str          # "LREACT_GGUF", "cache" or "downloaded"

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def default_url() -> str:
    return f"https://huggingface.co/{DEFAULT_GGUF_REPO}/resolve/main/{DEFAULT_GGUF_FILE}"


def grading() -> bool:
    """True while an assignment is graded, or checked by nbgrader's *Validate* (which sets
    ``NBGRADER_VALIDATING=1`` for the kernel it runs the notebook in): then no model is ever
    loaded, and the live cells take their scripted paths, since only the tests count there."""
    return os.environ.get("LREACT_GRADING", "") == "1" or \
        os.environ.get("NBGRADER_VALIDATING", "") == "1"


def fetch_allowed() -> bool:
    off = ("0", "false", "no", "off")
    return (os.environ.get(FETCH_ENV_VAR, "").strip().lower() not in off
            and os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("", "0", "false", "no"))


def _where_to_put_it() -> str:
    return (f"Download {DEFAULT_GGUF_FILE} ({DEFAULT_GGUF_SIZE}) from {default_url()} and set "
            f"{GGUF_ENV_VAR}=/path/to/{DEFAULT_GGUF_FILE} before starting Jupyter (any other "
            f"GGUF chat model works too), or run `make model` where the network allows.")


def _checked(path: str) -> str:
    """``path`` if it is a readable GGUF file, else a ModelFileError saying what is wrong."""
    if not os.path.exists(path):
        raise ModelFileError(f"{GGUF_ENV_VAR}={path!r}: no such file. Set it to the path of a "
                             f".gguf model file, or unset it to use the course's default model.")
    if not os.path.isfile(path):
        raise ModelFileError(f"{GGUF_ENV_VAR}={path!r} is a folder, not a .gguf file.")
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise ModelFileError(f"{GGUF_ENV_VAR}={path!r} cannot be read ({e.strerror}).") from None
    if magic != b"GGUF":
        raise ModelFileError(f"{GGUF_ENV_VAR}={path!r} is not a GGUF file (it does not start "
                             "with the GGUF signature). llama.cpp needs a .gguf model file.")
    return path


def cached_default():
    """The path of the default model in the Hugging Face cache, or None (never downloads)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(DEFAULT_GGUF_REPO, DEFAULT_GGUF_FILE)
    return found if isinstance(found, str) and os.path.isfile(found) else None


def locate(download: bool = True) -> ModelFile:
    """The GGUF file to run: ``$LREACT_GGUF``, else the default model from the Hugging Face cache,
    else (when ``download`` and fetching is allowed) the default model downloaded now.  Raises
    ``ModelFileError`` with what to do when there is none."""
    if grading():
        raise ModelFileError("No model is loaded while an assignment is graded (graded tests "
                             "use scripted models).")
    explicit = os.environ.get(GGUF_ENV_VAR, "").strip()
    if explicit:
        return ModelFile(_checked(os.path.expanduser(explicit)), "LREACT_GGUF")
    found = cached_default()
    if found:
        return ModelFile(found, "cache")
    if not download or not fetch_allowed():
        why = ("downloading is switched off (LREACT_FETCH_MODEL=0 or HF_HUB_OFFLINE=1)"
               if download else "it has not been downloaded yet")
        raise ModelFileError(f"The embedded model {DEFAULT_GGUF_FILE} is not on this machine and "
                             f"{why}. {_where_to_put_it()}")
    return ModelFile(fetch(), "downloaded")


def fetch() -> str:
    """Download the default model into the Hugging Face cache (progress bar; an interrupted
    download resumes) and return its path.  Raises ``ModelFileError`` when that is impossible."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise ModelFileError("huggingface_hub is not installed, so the model cannot be fetched "
                             "(`pip install huggingface_hub`). " + _where_to_put_it()) from None
    from huggingface_hub import constants

    unreachable = _unreachable(constants.ENDPOINT)
    if unreachable:     # offline: say so at once (huggingface_hub would retry for ~20 s)
        raise ModelFileError(f"Could not download {DEFAULT_GGUF_FILE}: {constants.ENDPOINT} "
                             f"cannot be reached ({unreachable}). {_where_to_put_it()}")
    print(f"Fetching {DEFAULT_GGUF_FILE} ({DEFAULT_GGUF_SIZE}) from {DEFAULT_GGUF_REPO} "
          "(once; it stays in the Hugging Face cache)...", file=sys.stderr, flush=True)
    try:
        return hf_hub_download(DEFAULT_GGUF_REPO, DEFAULT_GGUF_FILE)
    except KeyboardInterrupt:
        raise
    except Exception as e:   # offline, proxy, disk full: huggingface_hub raises many kinds
        reason = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise ModelFileError(f"Could not download {DEFAULT_GGUF_FILE} ({type(e).__name__}: "
                             f"{reason}). {_where_to_put_it()}") from None


def _unreachable(endpoint: str, timeout: float = 5.0):
    """Why ``endpoint`` cannot be reached (a few words), or None when it answers at all."""
    import httpx

    try:
        httpx.head(endpoint, timeout=timeout)
    except httpx.HTTPError as e:
        return f"{type(e).__name__}: {str(e).strip()[:120] or 'no answer'}"
    return None


def describe() -> str:
    """Which GGUF the embedded backend would run, without loading or downloading anything."""
    explicit = os.environ.get(GGUF_ENV_VAR, "").strip()
    if explicit:
        return f"{os.path.basename(explicit)} ({GGUF_ENV_VAR}={explicit})"
    found = cached_default()
    if found:
        return f"{DEFAULT_GGUF_FILE} (the course's default, in the Hugging Face cache)"
    return (f"{DEFAULT_GGUF_FILE} (the course's default, not downloaded yet: "
            + ("fetched on first use)" if fetch_allowed() else "set LREACT_GGUF or run `make model`)"))


def file_digest(path) -> str:
    """The sha256 of a file (the model file a recording came from), read once per version of
    the file (its size and modification time): a model file is hundreds of MB, and every live
    lens and every replayed recording asks for it."""
    st = os.stat(path)
    return _digest(os.path.realpath(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _digest(path, _size, _mtime_ns) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(argv=None) -> int:
    """``python -m lreact.engines.gguf``: fetch the default model once; prints where it is."""
    try:
        found = locate(download=True)
    except ModelFileError as e:
        print(f"lreact: {e}", file=sys.stderr)
        return 1
    print(f"lreact: embedded model ready: {found.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
