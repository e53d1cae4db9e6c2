"""environment.yml and binder/: we cannot run conda or Binder here, so check what can be checked.

- environment.yml lists what requirements.txt pins, at the same versions (the two cannot drift);
- binder/environment.yml is the same list without the editable install;
- binder/start and binder/postBuild are executable bash scripts that do their job, run here with a
  stand-in `ollama` (and `python`) on PATH that records how it was called.
"""
import os
import pathlib
import re
import shutil
import stat
import subprocess
import time

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
CONDA_NAMES = {"matplotlib": "matplotlib-base"}  # the same library without the Qt backend
# conda-forge builds llama-cpp-python some releases after PyPI: environment.yml asks for a range that
# holds requirements.txt's pin (the compiled engine comes built from conda-forge).
CONDA_RANGES = {"llama-cpp-python": (">=0.3.32,<0.4", "==0.3.36")}


def requirements():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, spec = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(.*)", line).groups()
            pins[name.lower()] = spec.replace(" ", "")
    return pins


def conda_spec(dep):
    """'jupyterlab=4.6.6' -> ('jupyterlab', '==4.6.6'); 'nbformat>=5.10,<6' -> (.., '>=5.10,<6')."""
    name, spec = re.fullmatch(r"([A-Za-z0-9_.\-]+)(.*)", dep).groups()
    if re.fullmatch(r"=[^=<>!].*", spec):
        spec = "=" + spec
    return name.lower(), spec


def load(path):
    env = yaml.safe_load(path.read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next((d["pip"] for d in env["dependencies"] if isinstance(d, dict)), [])
    return env, conda, pip


def test_environment_yml_lists_every_pin_of_requirements_txt():
    env, conda, pip = load(ROOT / "environment.yml")
    assert env["channels"][0] == "conda-forge"
    assert "defaults" not in env["channels"]
    conda_specs = dict(conda_spec(d) for d in conda if "[" not in d)
    pip_specs = dict(conda_spec(d) for d in pip if not d.startswith("-"))
    pins = requirements()
    assert pins, "requirements.txt is empty?"
    for name, spec in pins.items():
        if name in pip_specs:
            assert pip_specs[name] == spec, f"pip: {name}{pip_specs[name]} vs {spec}"
        else:
            conda_name = CONDA_NAMES.get(name, name)
            assert conda_name in conda_specs, f"{name} of requirements.txt is not in environment.yml"
            if name in CONDA_RANGES:
                assert (conda_specs[conda_name], spec) == CONDA_RANGES[name], name
                continue
            assert conda_specs[conda_name] == spec, \
                f"{conda_name}{conda_specs[conda_name]} in environment.yml, {name}{spec} in requirements.txt"


def test_environment_yml_has_python_the_server_the_client_and_the_package():
    _, conda, pip = load(ROOT / "environment.yml")
    assert "python=3.11" in conda and "pip" in conda
    server = [d for d in conda if d.startswith("ollama")]
    assert len(server) == 1 and "cpu_*" in server[0]  # the CPU build of the Ollama server
    assert "ollama>=0.4,<1" in pip  # the Python client from PyPI, as requirements.txt gives its range
    assert pip[-1] == "-e ."  # the helper package, editable
    for lib in ["jupyterlab", "numpy", "matplotlib-base", "ipywidgets", "nbgrader", "jsonschema",
                "nbclient"]:
        assert any(conda_spec(d)[0] == lib for d in conda if "[" not in d), lib


def test_binder_environment_is_the_root_one_without_the_editable_install():
    root_env, root_conda, root_pip = load(ROOT / "environment.yml")
    env, conda, pip = load(BINDER / "environment.yml")
    assert env["channels"] == root_env["channels"]
    assert conda == root_conda
    assert pip == [d for d in root_pip if not d.startswith("-e")]


@pytest.mark.parametrize("name", ["start", "postBuild"])
def test_binder_scripts_are_executable_bash(name):
    path = BINDER / name
    assert path.stat().st_mode & stat.S_IXUSR, f"binder/{name} is not executable (chmod +x)"
    assert path.read_text().startswith("#!/usr/bin/env bash\n")
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_binder_start_ends_with_exec():
    lines = [line.strip() for line in (BINDER / "start").read_text().splitlines()]
    code = [line for line in lines if line and not line.startswith("#")]
    assert code[-1] == 'exec "$@"'


# -- the scripts, run with stand-ins ------------------------------------------------------------

STUB_OLLAMA = """#!/usr/bin/env bash
if [ "$1" = list ] && [ ! -f "$RECORD.serve.pid" ]; then exit 1; fi  # server not up yet
echo "ollama $* OLLAMA_HOST=$OLLAMA_HOST OLLAMA_MODELS=$OLLAMA_MODELS" >> "$RECORD"
if [ "$1" = serve ]; then echo $$ > "$RECORD.serve.pid"; exec sleep 30; fi
exit 0
"""
STUB_PYTHON = """#!/usr/bin/env bash
echo "python $*" >> "$RECORD"
"""


def stub_env(tmp_path, **extra):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in [("ollama", STUB_OLLAMA), ("python", STUB_PYTHON)]:
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"),
           "RECORD": str(tmp_path / "record.txt"), "OLLAMA_LOG": str(tmp_path / "ollama.log")}
    env.update(extra)
    return env


def wait_for(path, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def kill_recorded_server(tmp_path):
    pid_file = tmp_path / "record.txt.serve.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), 15)
        except ProcessLookupError:
            pass


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_binder_start_starts_the_server_and_hands_over(tmp_path):
    env = stub_env(tmp_path)
    try:
        out = subprocess.run([str(BINDER / "start"), "env"], env=env, capture_output=True,
                             text=True, timeout=20, check=True).stdout
        record = wait_for(tmp_path / "record.txt")
    finally:
        kill_recorded_server(tmp_path)
    assert "ollama serve OLLAMA_HOST=127.0.0.1:11434" in record
    shown = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert shown["LREACT_MODEL"] == "qwen2.5:0.5b"  # the Binder default
    assert shown["OLLAMA_HOST"] == "127.0.0.1:11434"
    assert "binder/start: ollama serve" in out


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_binder_start_keeps_a_model_set_by_the_user_and_works_without_ollama(tmp_path):
    env = stub_env(tmp_path, LREACT_MODEL="qwen2.5:1.5b")
    (tmp_path / "bin" / "ollama").unlink()
    out = subprocess.run([str(BINDER / "start"), "env"], env=env, capture_output=True, text=True,
                         timeout=20, check=True).stdout
    assert "LREACT_MODEL=qwen2.5:1.5b" in out.splitlines()
    assert "no ollama command" in out


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_binder_postbuild_installs_pulls_and_stops_the_server(tmp_path):
    env = stub_env(tmp_path)
    subprocess.run([str(BINDER / "postBuild")], env=env, capture_output=True, text=True,
                   timeout=30, check=True, cwd=ROOT)
    record = (tmp_path / "record.txt").read_text().splitlines()
    assert record[0] == f"python -m pip install --no-deps -e {BINDER}/.."
    assert record[1].startswith("python -m lreact.engines.gguf")   # the embedded backend's model
    commands = [" ".join(line.split()[:2]) for line in record[2:]]
    assert commands == ["ollama serve", "ollama list", "ollama pull", "ollama list"]
    pulls = [line for line in record if line.startswith("ollama pull ")]
    assert pulls == [f"ollama pull qwen2.5:0.5b OLLAMA_HOST=127.0.0.1:11434 "
                     f"OLLAMA_MODELS={tmp_path}/home/.ollama/models"]
    pid = int((tmp_path / "record.txt.serve.pid").read_text())
    with pytest.raises(ProcessLookupError):  # the build-time server was stopped
        os.kill(pid, 0)


# -- nbgrader's instructor interface: off for students, on for instructors ----------------------

CONFIG = ROOT / "jupyter-config"
INSTRUCTOR_PLUGINS = ["@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                      "@jupyter/nbgrader:course-list", "@jupyter/nbgrader:menu"]
INSTRUCTOR_SERVER = ["nbgrader.server_extensions.formgrader",
                     "nbgrader.server_extensions.course_list"]
# JupyterLab's "Would you like to get notified about official Jupyter news?" pop-up
ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"


def _json(path):
    import json
    return json.loads(path.read_text())


def test_student_config_switches_off_the_instructor_interface_and_keeps_validate():
    disabled = _json(CONFIG / "student" / "labconfig" / "page_config.json")["disabledExtensions"]
    assert disabled == {**{p: True for p in INSTRUCTOR_PLUGINS}, ANNOUNCEMENTS: True}
    assert "@jupyter/nbgrader:validate-assignment" not in disabled
    server = _json(CONFIG / "student" / "jupyter_server_config.json")
    assert server["ServerApp"]["jpserver_extensions"] == {m: False for m in INSTRUCTOR_SERVER}
    instructor = _json(CONFIG / "instructor" / "labconfig" / "page_config.json")
    assert instructor["disabledExtensions"] == {**{p: False for p in INSTRUCTOR_PLUGINS},
                                                ANNOUNCEMENTS: True}
    server = _json(CONFIG / "instructor" / "jupyter_server_config.json")
    assert server["ServerApp"]["jpserver_extensions"] == {m: True for m in INSTRUCTOR_SERVER}
    for view in ("student", "instructor"):   # no news feed is fetched either
        assert _json(CONFIG / view / "jupyter_server_config.json")["LabApp"] == {"news_url": None}


def test_the_announcements_plugin_is_the_one_jupyterlab_ships():
    """The news pop-up is JupyterLab's announcements plugin; a renamed id would disable nothing."""
    import sys
    static = pathlib.Path(sys.prefix) / "share" / "jupyter" / "lab" / "static"
    if not static.is_dir():
        pytest.skip("JupyterLab's static files are not installed in this environment")
    shipped = "".join(p.read_text(errors="replace") for p in static.glob("jlab_core.*.js"))
    assert f'"{ANNOUNCEMENTS}"' in shipped
    assert "Would you like to get notified about official Jupyter news?" in shipped


def test_the_disabled_plugins_are_those_nbgrader_ships():
    """A plugin id nbgrader renamed would silently disable nothing."""
    import sys
    static = pathlib.Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / \
        "nbgrader" / "static"
    if not static.is_dir():
        pytest.skip("nbgrader's lab extension is not installed in this environment")
    shipped = "".join(p.read_text(errors="replace") for p in static.glob("*.js"))
    for plugin in INSTRUCTOR_PLUGINS + ["@jupyter/nbgrader:validate-assignment"]:
        assert f'"{plugin}"' in shipped, plugin


def test_jupyter_reads_the_student_config_from_the_config_path():
    """jupyter_core puts JUPYTER_CONFIG_PATH first, so the student config wins over the
    environment's own (nbgrader enables its server extensions in sys-prefix)."""
    import subprocess
    import sys
    code = ("from jupyterlab_server.config import get_page_config;"
            "from jupyter_server.extension.config import ExtensionConfigManager;"
            "from jupyter_core.paths import jupyter_config_path;"
            "d = get_page_config([])['disabledExtensions'];"
            "e = ExtensionConfigManager(read_config_path=jupyter_config_path()).get_jpserver_extensions();"
            "d = [k for k, v in d.items() if v] if isinstance(d, dict) else list(d);"
            "print(sorted(d)); print(sorted(k for k, v in e.items() if not v))")
    for view, plugins, server in [("student", INSTRUCTOR_PLUGINS + [ANNOUNCEMENTS], INSTRUCTOR_SERVER),
                                  ("instructor", [ANNOUNCEMENTS], [])]:
        env = {**os.environ, "JUPYTER_CONFIG_PATH": str(CONFIG / view)}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             timeout=60, check=True).stdout.splitlines()
        assert out == [str(sorted(plugins)), str(sorted(server))], (view, out)


def test_make_lab_binder_and_conda_use_the_student_view_and_formgrader_the_instructors():
    makefile = (ROOT / "Makefile").read_text()
    recipes = {}
    for target in ("lab", "formgrader"):
        m = re.search(rf"^{target}: setup( model)?\n\t(.+)$", makefile, re.M)   # lab: model too
        assert m, f"no `make {target}` recipe"
        recipes[target] = m.group(2)
    assert recipes["lab"].startswith("$(STUDENT_CONFIG) $(VENV)/bin/jupyter lab")
    assert recipes["formgrader"].startswith("$(INSTRUCTOR_CONFIG) $(VENV)/bin/jupyter lab")
    assert 'JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter-config/student' in makefile
    assert 'JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter-config/instructor' in makefile
    assert '--ServerApp.root_dir="$(CURDIR)"' in recipes["formgrader"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["variables"]["JUPYTER_CONFIG_PATH"] == "jupyter-config/student"
    assert (ROOT / env["variables"]["JUPYTER_CONFIG_PATH"] / "labconfig").is_dir()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_binder_start_hands_over_with_the_student_view(tmp_path):
    env = stub_env(tmp_path)
    (tmp_path / "bin" / "ollama").unlink()
    out = subprocess.run([str(BINDER / "start"), "env"], env=env, capture_output=True, text=True,
                         timeout=20, check=True).stdout
    shown = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert shown["JUPYTER_CONFIG_PATH"].split(":")[0] == str(CONFIG / "student")
