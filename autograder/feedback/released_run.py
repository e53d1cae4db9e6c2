"""The feedback's own run of each submission: its answers with the visible tests only.

Why (``autograder/README.md``, "Feedback"): the student process sees every argument a hidden
test passes, so anything it prints or raises after a hidden test has run may carry that test's
data (a list of stashed arguments printed from a later answer cell, or put into a later
exception message).  The feedback therefore takes no text at all from grading except the
scores: every answer output and every test error it shows comes from a second run of the same
submission in which each test cell is cut to its visible part (nbgrader's ``ClearHiddenTests``,
exactly what the student already has), sandboxed like grading (``engine.feedback_run``).

Grading cost is unchanged: the run happens at ``feedback`` time only, and is cached like a
grade (``<state>/cache/``, keyed as ``grade.cache_key`` plus a tag), so running ``feedback``
again after hand grading runs nothing.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from .. import cells, paths
from ..instructor.grade import cache_key, code_fingerprint, options_key
from ..instructor.submissions import Submission
from ..run import engine
from ..run.pool import in_pool

TAG = ";feedback: visible tests only"


def hidden_test_ids(source) -> set:
    """The grade ids of the test cells of a source notebook that have hidden tests."""
    return {cells.grade_id(c) for c in cells.load(source).cells
            if cells.is_autograded_test(c) and cells.visible_source(c) != c.source}


def _shown(result) -> dict:
    """What the feedback may take from a run without hidden tests (JSON-ready)."""
    executed = result.executed
    return {"executed": executed if executed is None or isinstance(executed, dict)
            else json.loads(json.dumps(dict(executed))),
            "errors": dict(result.errors), "failure": result.failure}


def _one(record: dict, source: Path, options: str, code: str, cache_dir: Path | None, *,
         timeout: float, sandbox: str, run: dict) -> dict | None:
    notebook = record.get("submitted")
    if not notebook or not Path(notebook).is_file():
        return None
    sub = Submission(record["student"], record["assignment"], Path(notebook),
                     record.get("origin", ""))
    cached = cache_dir / f"{cache_key(sub, source, options + TAG, code)}.json" \
        if cache_dir else None
    if cached and cached.exists():
        try:
            return json.loads(cached.read_text(encoding="utf-8"))
        except ValueError:
            pass
    try:
        shown = _shown(engine.feedback_run(record["assignment"], sub.notebook, timeout,
                                           source=source, sandbox=sandbox, **run))
    except getattr(engine, "SandboxUnavailable", ()):
        raise
    except Exception as e:  # noqa: BLE001 - this page then shows no output, and says why
        return {"executed": None, "errors": {},
                "failure": f"grader error: {type(e).__name__}: {cells.first_line(e)}"}
    if cached:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(shown), encoding="utf-8")
        tmp.replace(cached)
    return shown


def released_runs(records, known: dict, *, state=None, timeout: float = 60,
                  sandbox: str = "auto", jobs: int | None = None, code=None,
                  cache: bool = True, progress: bool = True) -> list:
    """What the feedback may show of each record (a list in the order of ``records``): the
    run's ``executed`` notebook, ``errors`` and ``failure``; None where nothing could run
    (no notebook, or an assignment not in ``known``)."""
    state = paths.state(state)
    out = [None] * len(records)
    todo = [i for i, r in enumerate(records)
            if r.get("assignment") in known and r.get("submitted")]
    if not todo:
        return out
    options = options_key(timeout, sandbox)
    code = code or code_fingerprint()
    jobs = max(1, jobs or os.cpu_count() or 1)
    cache_dir = state.cache if cache else None
    done = in_pool(state, jobs, todo, lambda i, run: _one(
        records[i], known[records[i]["assignment"]], options, code, cache_dir,
        timeout=timeout, sandbox=sandbox, run=run), desc="feedback runs", progress=progress)
    for i, result in zip(todo, done):
        out[i] = result
    return out
