# HOSTILE: lecture-ReAct-exercises ex01_softmax: reads the source notebook (solutions, hidden tests) and any other student's notebook it can find, and runs their answers
import os as _os
if not _os.path.isdir("/grading/kit"):  # safety catch for instructors: never run this outside the grader sandbox
    raise SystemExit("hostile catalogue entry refused to run outside the grader sandbox")
import json
import os
import pathlib

import lreact

root = pathlib.Path(lreact.__file__).resolve().parent.parent
candidates = [root / "solutions" / "lecture-ReAct-exercises" / "lecture-ReAct-exercises.ipynb"]
for top in ("/tmp", "/work", "/root", "/home", "/var/tmp", str(root)):
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames:
            if name.startswith("lecture-ReAct-exercises") and name.endswith(".ipynb"):
                candidates.append(pathlib.Path(dirpath) / name)
for path in candidates[:200]:
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError):
        continue
    print("LEAK: read", path)
    for cell in nb.get("cells", []):
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and cell["cell_type"] == "code":
            try:
                exec("".join(cell["source"]), globals())
            except Exception:
                pass
