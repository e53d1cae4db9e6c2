"""Install llama.cpp's own ``llama-server`` into the course's environment (``make setup``).

    python -m scripts.llama_server [--venv .venv] [--jobs N]

What it installs and where from: the ``llama-server`` target of the llama.cpp source that
llama-cpp-python's sdist vendors (``vendor/llama.cpp``), the same release whose Python binding
the embedded backend uses, so both engines run one llama.cpp commit.  The sdist is fetched with
pip (PyPI, pip's own HTTP cache) and checked against the sha256 pinned here; nothing else is
downloaded (the build's web UI download is switched off).  Licence: llama.cpp is MIT (its
LICENSE file is installed beside the binary); the Qwen chat templates it vendors (for the tests
of llama-server's reasoning and tool-call parsers) come from the same checked archive.

Why not a PyPI wheel: the only wheels that ship the ``llama-server`` executable are built for
their build runner's own CPU (AVX-VNNI and AMX instructions: they die with SIGILL on a CPU
without them), carry no provenance attestation, and bundle 160 MB of Vulkan libraries.  README,
"A class on one model server", says more.

The build (``cmake --build --target llama-server``) has portable CPU flags (x86-64 with AVX2, no
AVX-512 or AMX, as the Makefile builds llama-cpp-python), no web UI and no network, and links
statically, so the result is one file.  It is cached like pip's wheel cache: in
``$LREACT_CACHE_DIR`` (default ``$XDG_CACHE_HOME/lreact`` or ``~/.cache/lreact``)
``/llama-server/<key>/``, where the key is a digest of the sdist's sha256, the CMake flags, the
target and the machine's architecture.  The first set-up builds it (several minutes on two
cores; it says so and prints how long it took); every later one, in any clone, copies it from
the cache in well under a second.  Two set-ups at once take turns (a lock on the cache entry).

Environment:

- ``LREACT_LLAMA_SERVER=/path/to/llama-server``: use that binary instead (your own build, e.g.
  with CUDA); ``LREACT_LLAMA_SERVER=off`` installs nothing;
- ``LREACT_LLAMA_SERVER_CMAKE_ARGS``: more CMake flags (e.g. ``-DGGML_CUDA=ON``); part of the
  cache key, so such a build is cached apart;
- ``LREACT_LLAMA_SDIST=/path/llama_cpp_python-0.3.36.tar.gz``: the sdist from a local file (no
  PyPI), still checked against the pinned sha256.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

PACKAGE = "llama-cpp-python"
VERSION = "0.3.36"
SDIST = f"llama_cpp_python-{VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"   # CHANGELOG 0.3.36, .git/modules
TARGET = "llama-server"
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    # portable: AVX2, no AVX-512 / AMX (a native build dies with SIGILL on a smaller CPU)
    "-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON", "-DGGML_AVX512=OFF", "-DGGML_AMX_INT8=OFF",
    # one file: everything linked in, so the cached binary can be copied anywhere
    "-DBUILD_SHARED_LIBS=OFF",
    # no network while building: the web UI would be fetched from Hugging Face; curl is unused
    "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
    # the archive has no git history: name the commit, as `llama-server --version` would
    f"-DLLAMA_BUILD_COMMIT={LLAMA_CPP_COMMIT[:7]}",
)
# the chat templates the tests start llama-server with (--chat-template-file)
TEMPLATES = ("Qwen-Qwen3-0.6B.jinja", "Qwen3.5-4B.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja")
CACHE_FORMAT = 1
FIRST_BUILD = "about 6 minutes on an idle 2-core machine, 15 on a busy one"


def say(text: str) -> None:
    print(f"llama-server: {text}", flush=True)


def cache_root() -> Path:
    if os.environ.get("LREACT_CACHE_DIR", "").strip():
        return Path(os.environ["LREACT_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "lreact"


def flags() -> list[str]:
    return list(CMAKE_FLAGS) + shlex.split(os.environ.get("LREACT_LLAMA_SERVER_CMAKE_ARGS", ""))


def cache_key(cmake_flags) -> str:
    """The cache entry's name: what decides the binary (like pip's wheel cache key)."""
    what = {"format": CACHE_FORMAT, "sdist_sha256": SDIST_SHA256, "target": TARGET,
            "flags": list(cmake_flags), "machine": platform.machine(),
            "system": platform.system()}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:20]


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_sdist(into: Path) -> Path:
    """The pinned sdist, from ``$LREACT_LLAMA_SDIST`` or PyPI through pip, hash checked."""
    local = os.environ.get("LREACT_LLAMA_SDIST", "").strip()
    if local:
        path = Path(local).expanduser()
        if not path.is_file():
            raise SystemExit(f"llama-server: LREACT_LLAMA_SDIST={local}: no such file")
    else:
        say(f"fetching {PACKAGE} {VERSION}'s source from PyPI with pip (76 MB; pip's cache "
            "has it if llama-cpp-python was built here)")
        pins = into / "pin.txt"
        pins.write_text(f"{PACKAGE}=={VERSION} --hash=sha256:{SDIST_SHA256}\n")
        run = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                              "--no-binary", ":all:", "--require-hashes", "-r", str(pins),
                              "-d", str(into)], stdin=subprocess.DEVNULL)
        path = into / SDIST
        if run.returncode != 0 or not path.is_file():
            raise SystemExit(
                f"llama-server: pip could not download {SDIST} (exit {run.returncode}). "
                f"Offline, put the file (sha256 {SDIST_SHA256}) on this machine and run "
                f"again with LREACT_LLAMA_SDIST=/path/to/{SDIST}, or set "
                "LREACT_LLAMA_SERVER=off to go on without llama-server.")
    got = sha256_of(path)
    if got != SDIST_SHA256:
        raise SystemExit(f"llama-server: {path} has sha256 {got}, not the pinned "
                         f"{SDIST_SHA256}: refusing to build it.")
    return path


def unpack_llama_cpp(sdist: Path, into: Path) -> Path:
    """Only ``vendor/llama.cpp`` of the archive, extracted with tarfile's ``data`` filter (no
    absolute paths, no ``..``, no links out of the folder, no device files)."""
    prefix = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        tar.extractall(into, members=members, filter="data")
    return into / prefix


def cmake() -> str:
    found = shutil.which("cmake")
    if found:
        return found
    raise SystemExit("llama-server: building it needs cmake and a C++ compiler (apt-get install "
                     "cmake g++, or `pip install cmake` into .venv); or set "
                     "LREACT_LLAMA_SERVER=off to go on without llama-server.")


def build(entry: Path, jobs: int) -> None:
    """Build the target into ``entry`` (a fresh folder that becomes the cache entry)."""
    cmake_flags = flags()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lreact-llama-server-") as tmp:
        tmp = Path(tmp)
        sdist = fetch_sdist(tmp)
        source = unpack_llama_cpp(sdist, tmp / "src")
        build_dir = tmp / "build"
        say(f"building llama.cpp {LLAMA_CPP_COMMIT[:9]} (from {SDIST}) with {jobs} job(s): "
            f"{FIRST_BUILD}; only this first time, later set-ups copy it from the cache")
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        log = tmp / "build.log"
        with open(log, "wb") as out:
            for step in ([cmake(), "-S", str(source), "-B", str(build_dir), *generator,
                          *cmake_flags],
                         [cmake(), "--build", str(build_dir), "--config", "Release",
                          "--target", TARGET, "-j", str(jobs)]):
                if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL).returncode != 0:
                    tail = log.read_bytes()[-3000:].decode("utf-8", "replace")
                    raise SystemExit(f"llama-server: the build failed at `{shlex.join(step)}`; "
                                     f"the end of its log:\n{tail}")
        binary = build_dir / "bin" / TARGET
        entry.mkdir(parents=True)
        shutil.copy2(binary, entry / TARGET)
        shutil.copy2(source / "LICENSE", entry / "LICENSE")
        (entry / "templates").mkdir()
        for name in TEMPLATES:
            shutil.copy2(source / "models" / "templates" / name, entry / "templates" / name)
        seconds = time.monotonic() - start
        version = subprocess.run([str(entry / TARGET), "--version"], capture_output=True,
                                 text=True, timeout=60)
        info = {"package": PACKAGE, "version": VERSION, "sdist": SDIST,
                "sdist_sha256": SDIST_SHA256, "llama_cpp_commit": LLAMA_CPP_COMMIT,
                "target": TARGET, "cmake_flags": cmake_flags, "jobs": jobs,
                "build_seconds": round(seconds, 1),
                "llama_server_version": (version.stdout + version.stderr).strip(),
                "built": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        (entry / "BUILD-INFO.json").write_text(json.dumps(info, indent=1) + "\n")
    say(f"built in {seconds / 60:.1f} minutes ({seconds:.0f} s)")


@contextlib.contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached_build(jobs: int) -> Path:
    """The cache entry of this build, built first if missing."""
    root = cache_root() / "llama-server"
    key = cache_key(flags())
    entry = root / key
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SystemExit(f"llama-server: cannot write the cache folder {root} ({e.strerror}): "
                         "set LREACT_CACHE_DIR to a folder you can write") from None
    with locked(root / f"{key}.lock"):
        if not (entry / "BUILD-INFO.json").is_file():
            shutil.rmtree(entry, ignore_errors=True)        # an interrupted copy
            partial = root / f"{key}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            build(partial, jobs)
            partial.rename(entry)
        else:
            info = json.loads((entry / "BUILD-INFO.json").read_text())
            say(f"cached build {entry} (built in {info['build_seconds']:.0f} s on "
                f"{info['built'][:10]})")
    return entry


def install(venv: Path, jobs: int) -> int:
    start = time.monotonic()
    own = os.environ.get("LREACT_LLAMA_SERVER", "").strip()
    if own.lower() in ("off", "0", "no", "none"):
        say("LREACT_LLAMA_SERVER=off: not installed (the class server and its tests need it)")
        return 0
    if own:
        if not (os.path.isfile(own) and os.access(own, os.X_OK)):
            raise SystemExit(f"llama-server: LREACT_LLAMA_SERVER={own} is not an executable file")
        say(f"using {own} (LREACT_LLAMA_SERVER); nothing built")
        return 0
    entry = cached_build(jobs)
    bin_dir, share = venv / "bin", venv / "share" / "llama-server"
    bin_dir.mkdir(parents=True, exist_ok=True)
    tmp = bin_dir / f".{TARGET}.tmp"
    shutil.copy2(entry / TARGET, tmp)
    tmp.replace(bin_dir / TARGET)
    shutil.rmtree(share, ignore_errors=True)
    shutil.copytree(entry, share, ignore=shutil.ignore_patterns(TARGET))
    check = subprocess.run([str(bin_dir / TARGET), "--version"], capture_output=True, text=True,
                           timeout=60)
    if check.returncode != 0:
        raise SystemExit(f"llama-server: the installed binary does not run (exit "
                         f"{check.returncode}): {(check.stdout + check.stderr)[-500:]}; delete "
                         f"{entry} and run `make setup` again")
    first = (check.stdout + check.stderr).strip().splitlines()[0]
    say(f"installed {bin_dir / TARGET} ({first}) in {time.monotonic() - start:.1f} s")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.llama_server",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--venv", type=Path, default=Path(sys.prefix),
                   help="environment to install into (default: this Python's, %(default)s)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                   help="compile jobs (default: the number of cores, %(default)s)")
    args = p.parse_args(argv)
    return install(args.venv.resolve(), max(1, args.jobs))


if __name__ == "__main__":
    sys.exit(main())
