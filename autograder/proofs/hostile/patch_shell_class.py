# HOSTILE: lecture-ReAct-exercises ex01_softmax: patches methods on the InteractiveShell class so that every later cell is replaced by a no-op
from IPython.core.interactiveshell import InteractiveShell

_run_cell = InteractiveShell.run_cell


def run_cell(self, raw_cell, *args, **kwargs):
    return _run_cell(self, "pass", *args, **kwargs)


InteractiveShell.run_cell = run_cell
InteractiveShell.run_cell_async = None
InteractiveShell.transform_cell = lambda self, cell: "pass\n"
softmax_answer = [0.25, 0.25, 0.25, 0.25]
