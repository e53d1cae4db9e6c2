"""``python -m autograder grade SUBMISSIONS [--out grades.csv] [--jobs N] [--timeout S]``.

Grades every submission found (see ``submissions.py``) in parallel, each in its own
sandboxed run, and writes one CSV row per (student, assignment):
``student, assignment, <one column per graded test cell>, total, needs_manual_grade``.
Results are cached under the grader's state folder (``.grading/`` by default, never visible
to a sandbox), keyed by the submission's bytes, the source notebook's bytes, the timeout and
the engine version: re-running grades only what is new or changed.
"""
from __future__ import annotations

import csv
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import nbformat

from . import engine, paths
from .submissions import Submission, assignments, discover


def test_columns(source: Path) -> list[str]:
    nb = engine.load(source)
    return [engine.grade_id(c) for c in nb.cells if engine.is_autograded_test(c)]


def _cache_key(sub: Submission, source: Path, timeout: float) -> str:
    body = sub.notebook.read_bytes() if sub.notebook else (sub.problem or "").encode()
    return engine.file_hash(body, source, engine.RUNNER, f"timeout={timeout}")


def _cache_key_for(sub: Submission, source: Path, timeout: float, sandbox: str) -> str:
    return engine.file_hash(_cache_key(sub, source, timeout), f"sandbox={sandbox}")


def grade_one(sub: Submission, source: Path, timeout: float, cache_dir: Path | None,
              sandbox: str = "auto") -> dict:
    """Grade (or fetch from the cache) one submission; a plain dict, JSON-ready."""
    key = _cache_key_for(sub, source, timeout, sandbox)
    cached = cache_dir / f"{key}.json" if cache_dir else None
    if cached and cached.exists():
        try:
            record = json.loads(cached.read_text(encoding="utf-8"))
            # identical bytes from two students share one grading; the names are theirs
            record.update(student=sub.student, assignment=sub.assignment, origin=sub.origin,
                          cached=True)
            return record
        except ValueError:
            pass
    if sub.notebook is None:
        r = engine.zero_result(sub.assignment, sub.problem, source=source)
    else:
        try:
            r = engine.grade_notebook(sub.assignment, sub.notebook, timeout, source=source,
                                      sandbox=sandbox)
        except engine.SandboxUnavailable:
            raise
        except Exception as e:  # noqa: BLE001 - one submission never stops the class
            r = engine.zero_result(sub.assignment, f"grader error: {type(e).__name__}: {e}",
                                   source=source)
    record = {
        "student": sub.student, "assignment": sub.assignment, "origin": sub.origin,
        "scores": {k: list(v) for k, v in r.scores.items()}, "manual": r.manual,
        "errors": r.errors, "failure": r.failure, "notes": r.notes,
        "total": r.total, "possible": r.possible,
        "executed": r.executed if r.executed is not None else None,
    }
    if cached:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        tmp.replace(cached)
    record["cached"] = False
    return record


def grade_all(folder: Path, *, root: Path = paths.ROOT, out: Path | None = None,
              jobs: int | None = None, timeout: float = 60, state: Path | None = None,
              sandbox: str = "auto", progress: bool = True,
              cache: bool = True) -> tuple[list, list]:
    """Grade a folder of submissions; returns (records, failures) and writes the CSV."""
    state = Path(state or paths.STATE_DIR)
    known = assignments(root)
    if not known:
        raise SystemExit(f"no source notebooks under {Path(root) / 'solutions'}")
    subs = discover(Path(folder), known, state / "unzipped")
    jobs = jobs or os.cpu_count() or 1
    from .sandbox import describe
    print(describe(sandbox), file=sys.stderr)
    records = []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(subs), desc="grading", unit="submission", file=sys.stderr)
    engine.warm_pool(min(jobs, len(subs)))
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            cache_dir = state / "cache" if cache else None
            futures = [pool.submit(grade_one, s, known[s.assignment], timeout, cache_dir,
                                   sandbox) for s in subs]
            for f in as_completed(futures):
                records.append(f.result())
                if bar:
                    bar.update(1)
    finally:
        engine.drain_pool()
    if bar:
        bar.close()
    records.sort(key=lambda r: (r["student"], r["assignment"]))
    failures = [r for r in records if r["failure"]]
    if out:
        write_csv(records, known, Path(out))
    return records, failures


def write_csv(records, known: dict, out: Path) -> None:
    columns = []
    for aid in sorted({r["assignment"] for r in records} or known):
        for gid in test_columns(known[aid]):
            if gid not in columns:
                columns.append(gid)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", "assignment", *columns, "total", "needs_manual_grade"])
        for r in records:
            w.writerow([r["student"], r["assignment"],
                        *[_num(r["scores"][c][0]) if c in r["scores"] else "" for c in columns],
                        _num(r["total"]), "true" if r["manual"] else "false"])


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def summary(records, failures) -> str:
    lines = [f"graded {len(records)} submission(s) "
             f"({sum(1 for r in records if r.get('cached'))} from the cache)"]
    if failures:
        lines.append(f"{len(failures)} submission(s) had problems:")
        for r in failures:
            lines.append(f"  {r['student']} / {r['assignment']} ({r['origin']}): {r['failure']}")
    else:
        lines.append("no failures")
    return "\n".join(lines)


def executed_notebook(record) -> nbformat.NotebookNode | None:
    return nbformat.from_dict(record["executed"]) if record.get("executed") else None
