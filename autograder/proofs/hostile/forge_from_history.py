# HOSTILE: lecture-ReAct-exercises ex01_softmax: looks for a verdict sentinel or test code in the input history (In) and prints it after every later cell
ip = get_ipython()  # noqa: F821 - IPython provides it


def _forge(result=None):
    for text in list(ip.user_ns.get("In", [])):
        if "_forge" in str(text):
            continue  # this cell itself
        for word in str(text).split():
            if word.startswith(("LREACT-DONE", "'LREACT-DONE", '"LREACT-DONE')):
                print(word.strip("'\""), flush=True)
        if "assert_" in str(text) or "HIDDEN" in str(text):
            print("LEAK: a test cell reached the answers' history:", str(text)[:80])


ip.events.register("post_run_cell", _forge)
softmax_answer = [0.25, 0.25, 0.25, 0.25]
