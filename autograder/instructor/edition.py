"""``python -m autograder student-edition OUT``: the students' copy of the course, built from this
(the instructor's) repository.

What it writes to ``OUT`` (a new or empty folder):

- ``lectures/`` (the notebooks and their figures), ``exercises/`` and ``lab/`` (the released
  student versions, checked current first, as ``release --check`` does);
- ``lreact/``: the package the notebooks import; every module that holds a reference
  implementation (a function a graded task asks students to write, ``@reference_implementation``)
  or a near copy of a graded answer (``@near_copy_of``, ``lreact/reference.py``) is compiled for
  this Python and shipped without its source (``lreact/<module>.pyc``), so the lecture's views
  and the engines that need that code work and the code does not give the task away (the README
  of the edition says so, and why);
- the set-up: ``README.md``, ``Makefile``, ``tests/`` (the edition's own "does it run here"
  tests) from ``student_edition/``; ``requirements.txt``, ``environment.yml`` and ``binder/``
  without the grader's own dependencies; ``requirements-test.txt`` with what those tests need
  (pytest; ``make test`` installs it); ``pyproject.toml``; ``jupyter-config/student/``;
- ``GRADING.md``, the students' page on how their work is graded (the labs point to it).

Nothing else: no ``solutions/``, no ``autograder/``, no catalogues, no instructor tests.  Before
it returns, the edition is searched for every hidden-test line and string, every solution line
and the body of every reference implementation and model answer (``proofs/edition_leaks.py``):
an edition that holds one is deleted and the command fails, naming it.

Every repository path a shipped file mentions (``lab/x.ipynb``, ``jupyter-config/student/``, a
top-level file such as ``requirements-test.txt``, a module such as ``autograder.run.engine`` or
``python -m autograder``) must exist in the edition (``dangling``), or the command fails naming
file and mention.  What the edition leaves out on purpose is said so where it is mentioned: the
set-up files drop the comment lines of the instructor's own files and requirements
(``_requirements``), and the shipped source of ``lreact``, whose comments point the instructor to
the grader and the tests, gets ``(not in the student edition)`` after each such mention
(``_annotate``).  Lecture connection: none (``autograder/README.md``, "Two editions").
"""
from __future__ import annotations

import io
import py_compile
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

from .. import paths
from . import release

TEMPLATES = Path(__file__).resolve().parent / "student_edition"
GRADER_ONLY = ("distributed", "cryptography", "latex2mathml")   # what only the grader uses
COPIED = ("lectures", "exercises", "lab", "jupyter-config/student", "binder", "pyproject.toml",
          "GRADING.md")


class EditionError(RuntimeError):
    """The edition could not be built, or would give something away (the message says what)."""


def build(out: Path, root: Path = paths.ROOT) -> list[str]:
    """Write the student edition to ``out``; the relative paths written, sorted."""
    from ..proofs.edition_leaks import leaks
    root, out = Path(root), Path(out)
    if out.exists() and any(out.iterdir()):
        raise EditionError(f"{out} is not empty: give a new or empty folder")
    if sys.version_info[:2] != (3, 11):
        raise EditionError("build the student edition with Python 3.11: the compiled part of "
                           f"lreact is for the students' Python 3.11, this is {sys.version.split()[0]}")
    said = []
    if release.release(check=True, root=root, out=said.append) != 0:
        raise EditionError("the student versions are not current: run `python -m autograder "
                           "release` first (" + "; ".join(s for s in said if "up to date" not in s)
                           + ")")
    out.mkdir(parents=True, exist_ok=True)
    try:
        for name in COPIED:
            src = root / name
            if src.is_dir():
                shutil.copytree(src, out / name, ignore=shutil.ignore_patterns(
                    "__pycache__", ".ipynb_checkpoints"))
            elif src.is_file():
                (out / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src, out / name)
        _package(root / "lreact", out / "lreact")
        shutil.copytree(TEMPLATES, out, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        _requirements(root, out)
        _annotate(out, root)
        missing = dangling(out, root)
        if missing:
            raise EditionError("the edition mentions paths it does not hold:\n  " + "\n  ".join(
                f"{where}: {what}" for where, what in missing[:40]))
        found = leaks(out, root)
        if found:
            raise EditionError("the edition would give answers away:\n  "
                               + "\n  ".join(map(str, found[:20])))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def _package(src: Path, dest: Path) -> None:
    """``lreact`` with every module that holds a reference implementation compiled, source-less."""
    for f in sorted(src.rglob("*")):
        if f.is_dir() or "__pycache__" in f.parts:
            continue
        target = dest / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.suffix == ".py" and ships_compiled(f):
            py_compile.compile(str(f), cfile=str(target.with_suffix(".pyc")), doraise=True,
                               dfile=f"lreact/{f.relative_to(src).as_posix()}",
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        else:
            shutil.copy(f, target)


from lreact.reference import COMPILED_MARKS  # noqa: E402 - the marks live with the decorators


def ships_compiled(path: Path) -> bool:
    """Whether the module at ``path`` defines a function decorated ``@reference_implementation``
    or ``@near_copy_of(...)``: the edition ships it compiled, without source."""
    import ast

    from lreact.reference import marked
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(marked(n, *COMPILED_MARKS) for n in ast.walk(tree))


def _requirements(root: Path, out: Path) -> None:
    """The students' requirements, test requirements, conda environments and ``pyproject.toml``:
    the instructor's, less the grader's dependencies (each with the comment lines just above it)
    and less the instructor's notes (a comment line, or a line of ``pyproject.toml``, that
    mentions a path, file or module the edition does not hold: ``_mentions_missing``)."""
    def requirement(line: str) -> str:
        return re.split(r"[=<>\[ ;]", line.strip().lstrip("- "), maxsplit=1)[0].lower()

    written = ("requirements.txt", "requirements-test.txt", "environment.yml",
               "binder/environment.yml")
    for name in written:                 # they exist, for the mentions of one another
        if (root / name).exists():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).touch()
    missing = _mentions_missing(out, root)

    def filtered(lines, drop) -> list:
        kept, block = [], []          # block: the comment lines above the next requirement
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("#"):
                if not missing(line):
                    block.append(line)
                continue
            if not stripped or stripped.endswith(":") and not stripped.startswith("-"):
                kept += block + [line]
            elif not drop(requirement(line)):
                kept += block + [line]
            block = []
        return kept + block

    for name, drop in zip(written, (lambda n: n in GRADER_ONLY,
                                    lambda n: n not in EDITION_TESTS_NEED,
                                    lambda n: n in GRADER_ONLY, lambda n: n in GRADER_ONLY)):
        src = root / name
        if not src.exists():
            continue
        lines = filtered(src.read_text(encoding="utf-8").splitlines(), drop)
        if name == "requirements-test.txt":
            lines = [EDITION_TESTS_HEADER] + [ln for ln in lines if not ln.startswith("#")]
        (out / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    project = out / "pyproject.toml"
    if project.exists():
        import tomllib
        text = "\n".join(ln for ln in project.read_text(encoding="utf-8").splitlines()
                         if not missing(ln)) + "\n"
        tomllib.loads(text)                 # still a valid file
        project.write_text(text, encoding="utf-8")


# what the edition's own tests (``make test``) need on top of requirements.txt, at the pins of the
# instructor's requirements-test.txt
EDITION_TESTS_NEED = ("pytest",)
EDITION_TESTS_HEADER = ("# What `make test` needs on top of requirements.txt: the edition's own "
                        "tests (tests/) run with pytest.")


def _mentions_missing(folder: Path, root: Path):
    """A predicate: whether a line mentions a path, file or module that ``folder`` lacks."""
    dirs, files = _top_names(root, folder)
    pattern = _pattern(dirs, files, _packages(root, folder))
    return lambda line: any(not _found(folder, kind, mention)
                            for _, _, kind, mention in _mentions(line, pattern))


def command(out: Path, *, root: Path = paths.ROOT) -> int:
    try:
        written = build(out, root)
    except EditionError as e:
        print(f"student-edition: {e}", file=sys.stderr)
        return 1
    compiled = [p for p in written if p.endswith(".pyc")]
    print(f"student-edition: wrote {len(written)} files to {out} ({len(compiled)} lreact "
          f"module(s) compiled, no source: {', '.join(compiled)}); nothing of solutions/, "
          "the hidden tests, the mark schemes or the catalogues is in it. Publish that folder "
          "(a repository of its own, or a zip); keep this one private.")
    return 0


# --- every path a shipped file mentions exists in the edition --------------------------------

ANNOTATION = " (not in the student edition)"
BINARY = (".pyc", ".png", ".jpg", ".gguf", ".zip", ".gz", ".whl")


def _top_names(root: Path, folder: Path) -> tuple[set, set]:
    """(directories, files) at the top of the instructor's repository (what is there and what
    git tracks) and of the edition: the first parts a mention can start with."""
    names = {p.name for p in Path(root).iterdir() if not p.name.startswith(".")}
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True,
                                text=True, timeout=60, check=True).stdout.split("\n")
        names |= {line.split("/")[0] for line in listed if line and not line.startswith(".")}
    except (OSError, subprocess.SubprocessError):
        pass
    tops = {(n, (root / n).is_dir()) for n in names} | \
        {(p.name, p.is_dir()) for p in Path(folder).iterdir() if not p.name.startswith(".")}
    return {n for n, d in tops if d}, {n for n, d in tops if not d}


def _pattern(dirs: set, files: set, packages: set):
    alt = lambda names: "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    parts = [rf"(?P<path>(?:{alt(dirs)})/[\w.*<>/-]*)"]
    if files:
        parts.append(rf"(?P<file>(?:{alt(files)}))(?![\w-])")
    if packages:
        parts.append(rf"(?P<module>(?:python3? -m )(?:{alt(packages)})(?:\.\w+)*"
                     rf"|(?:{alt(packages)})(?:\.[a-z_]\w*)+)")
    return re.compile(r"(?<![\w./~-])(?:" + "|".join(parts) + ")")


def _packages(root: Path, folder: Path) -> set:
    return {p.parent.name for base in (root, folder) for p in Path(base).glob("*/__init__.py")}


def _found(folder: Path, kind: str, text: str) -> bool:
    """Whether the mention ``text`` (``kind``: path, file or module) exists in ``folder``."""
    if kind == "module":
        dotted = text.split()[-1].split(".")
        for n in range(len(dotted), 0, -1):           # the longest part that is a module
            base = Path(folder, *dotted[:n])
            if base.is_dir() and (base / "__init__.py").exists() or \
                    base.with_suffix(".py").exists() or base.with_suffix(".pyc").exists():
                return True
        return False
    path = re.sub(r"<[^<>/]*>", "*", text.rstrip("/"))
    if "*" in path:
        return any(Path(folder).glob(path))
    target = Path(folder, path)
    return target.exists() or (target.suffix == ".py" and target.with_suffix(".pyc").exists())


def _mentions(text: str, pattern):
    """(start, end, kind, mention) of every repository path, file or module ``text`` names."""
    for m in pattern.finditer(text):
        kind = m.lastgroup
        mention = m.group(kind)
        trimmed = mention.rstrip(".,;:)")
        if kind == "module":
            trimmed = trimmed.rstrip(".")
        if not trimmed or trimmed.endswith("/") and trimmed.count("/") == 0:
            continue
        yield m.start(kind), m.start(kind) + len(trimmed), kind, trimmed


def _texts(folder: Path):
    for path in sorted(Path(folder).rglob("*")):
        if not path.is_file() or path.suffix in BINARY or "__pycache__" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if path.suffix == ".ipynb":
            import json
            text = "\n\n".join("".join(c["source"]) if isinstance(c["source"], list)
                               else c["source"] for c in json.loads(text).get("cells", []))
        yield str(path.relative_to(folder)), text


def _annotation_point(text: str, start: int, end: int) -> int:
    """Where ``ANNOTATION`` goes after the mention ``text[start:end]``: after a call's ``()``
    and, inside a code span (backticks), after the span's closing backticks."""
    end += 2 if text.startswith("()", end) else 0
    line_start = text.rfind("\n", 0, start) + 1
    if len(re.findall(r"`+", text[line_start:start])) % 2:       # inside `...` or ``...``
        closing = re.compile(r"`+").search(text, end)
        newline = text.find("\n", end)
        if closing and (newline < 0 or closing.start() < newline):
            return closing.end()
    return end


def _annotated(text: str, start: int, end: int) -> bool:
    at = _annotation_point(text, start, end)
    return re.sub(r"\s+", " ", text[at:at + len(ANNOTATION) + 8]).startswith(ANNOTATION)


def dangling(folder: Path, root: Path = paths.ROOT) -> list[tuple[str, str]]:
    """(file, mention) for every repository path, top-level file or module that a file of the
    edition ``folder`` mentions and the edition does not hold, unless the mention says so
    (``ANNOTATION`` after it)."""
    folder, root = Path(folder), Path(root)
    dirs, files = _top_names(root, folder)
    pattern = _pattern(dirs, files, _packages(root, folder))
    out = []
    for rel, text in _texts(folder):
        for start, end, kind, mention in _mentions(text, pattern):
            if not _found(folder, kind, mention) and not _annotated(text, start, end):
                out.append((rel, mention))
    return sorted(set(out))


def _docstrings(source: str) -> set:
    """(line, column) where each docstring of ``source`` starts."""
    import ast
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            found.add((node.body[0].lineno, node.body[0].col_offset))
    return found


def _annotate(folder: Path, root: Path) -> None:
    """In the shipped source of ``lreact``, every comment or docstring that mentions a path, file
    or module missing from the edition (a pointer of the instructor's: the grader, the tests)
    says so: ``ANNOTATION`` after the mention.  Code and other strings are left alone (a
    mention there still fails ``dangling``)."""
    dirs, files = _top_names(root, folder)
    pattern = _pattern(dirs, files, _packages(root, folder))
    for path in sorted((folder / "lreact").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        offsets = [0]
        for line in text.splitlines(keepends=True):
            offsets.append(offsets[-1] + len(line))
        docstrings, inserts = _docstrings(text), []
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type != tokenize.COMMENT and not (tok.type == tokenize.STRING
                                                     and tok.start in docstrings):
                continue
            base = offsets[tok.start[0] - 1] + tok.start[1]
            for start, end, kind, mention in _mentions(tok.string, pattern):
                if not _found(folder, kind, mention) and \
                        not _annotated(tok.string, start, end):
                    inserts.append(base + _annotation_point(tok.string, start, end))
        for at in sorted(set(inserts), reverse=True):
            text = text[:at] + ANNOTATION + text[at:]
        if inserts:
            compile(text, str(path), "exec")          # still a module
            path.write_text(text, encoding="utf-8")
