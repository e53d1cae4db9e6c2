"""scripts/llama_server.py, the step of ``make setup`` that installs llama-server, without a
build: the cache key, the hash check of the sdist, a cache entry copied into an environment, and
the switches.  (The build itself runs once per machine in ``make setup``; the tests on the
binary are tests/test_llama_server_real.py.)"""
from __future__ import annotations

import json
import os
import stat

import pytest

from scripts import llama_server as ls


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LREACT_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("LREACT_LLAMA_SERVER", "LREACT_LLAMA_SERVER_CMAKE_ARGS", "LREACT_LLAMA_SDIST"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "cache" / "llama-server"


def test_the_cache_key_is_the_source_the_flags_and_the_machine(cache, monkeypatch):
    plain = ls.cache_key(ls.flags())
    assert plain == ls.cache_key(ls.flags()) and len(plain) == 20
    monkeypatch.setenv("LREACT_LLAMA_SERVER_CMAKE_ARGS", "-DGGML_CUDA=ON")
    assert ls.flags()[-1] == "-DGGML_CUDA=ON" and ls.cache_key(ls.flags()) != plain
    monkeypatch.setattr(ls, "SDIST_SHA256", "0" * 64)
    monkeypatch.delenv("LREACT_LLAMA_SERVER_CMAKE_ARGS")
    assert ls.cache_key(ls.flags()) != plain
    assert "-DGGML_NATIVE=OFF" in ls.CMAKE_FLAGS and "-DLLAMA_USE_PREBUILT_UI=OFF" in ls.CMAKE_FLAGS


def test_an_sdist_with_another_hash_is_never_built(cache, tmp_path, monkeypatch):
    fake = tmp_path / ls.SDIST
    fake.write_bytes(b"not the pinned archive")
    monkeypatch.setenv("LREACT_LLAMA_SDIST", str(fake))
    with pytest.raises(SystemExit) as e:
        ls.fetch_sdist(tmp_path)
    assert "not the pinned" in str(e.value) and ls.SDIST_SHA256 in str(e.value)
    monkeypatch.setenv("LREACT_LLAMA_SDIST", str(tmp_path / "missing.tar.gz"))
    with pytest.raises(SystemExit, match="no such file"):
        ls.fetch_sdist(tmp_path)


def fake_entry(cache) -> None:
    """A cache entry as a build leaves it, its binary a script that prints a version."""
    entry = cache / ls.cache_key(ls.flags())
    (entry / "templates").mkdir(parents=True)
    binary = entry / "llama-server"
    binary.write_text("#!/bin/sh\necho 'version: 0.5.0-dev (build 0, commit 0c1e570)'\n")
    binary.chmod(0o755)
    (entry / "LICENSE").write_text("MIT\n")
    (entry / "templates" / "Qwen-Qwen3-0.6B.jinja").write_text("{{ messages }}")
    (entry / "BUILD-INFO.json").write_text(json.dumps({"build_seconds": 871.5,
                                                       "built": "2026-12-06T05:55:58"}))


def test_a_cached_build_is_copied_not_rebuilt(cache, tmp_path, monkeypatch, capsys):
    fake_entry(cache)
    monkeypatch.setattr(ls, "build", lambda *a: pytest.fail("built although cached"))
    venv = tmp_path / "venv"
    assert ls.install(venv, jobs=2) == 0
    installed = venv / "bin" / "llama-server"
    assert installed.is_file() and stat.S_IMODE(installed.stat().st_mode) & 0o111
    assert (venv / "share" / "llama-server" / "templates" / "Qwen-Qwen3-0.6B.jinja").is_file()
    assert (venv / "share" / "llama-server" / "LICENSE").is_file()
    said = capsys.readouterr().out
    assert "cached build" in said and "built in 872 s" in said and "commit 0c1e570" in said


def test_an_interrupted_cache_entry_is_built_again(cache, tmp_path, monkeypatch):
    entry = cache / ls.cache_key(ls.flags())
    entry.mkdir(parents=True)            # no BUILD-INFO.json: a build that did not finish
    built = []

    def build(partial, jobs):
        built.append(jobs)
        fake_entry(cache)                # what a finished build leaves, then moved in place
        os.rename(cache / ls.cache_key(ls.flags()), partial)

    monkeypatch.setattr(ls, "build", build)
    assert ls.install(tmp_path / "venv", jobs=3) == 0 and built == [3]
    assert (entry / "BUILD-INFO.json").is_file()


def test_the_switches(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LREACT_LLAMA_SERVER", "off")
    assert ls.install(tmp_path / "venv", jobs=1) == 0
    assert not (tmp_path / "venv").exists() and "not installed" in capsys.readouterr().out
    monkeypatch.setenv("LREACT_LLAMA_SERVER", str(tmp_path / "nothing"))
    with pytest.raises(SystemExit, match="is not an executable file"):
        ls.install(tmp_path / "venv", jobs=1)
