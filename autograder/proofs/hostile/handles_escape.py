# HOSTILE: lecture-ReAct-lab run_agent: uses the handles to the test's ScriptedLLM and tool functions to reach the trusted process (private attributes, frames, the module of a method, setting attributes, the recorded calls) and patch its checks
def run_agent(user_input, llm, tools, registry, *, history=None, max_steps=8):
    if type(llm).__module__.startswith("lreact"):
        return "done"          # the lab's own live cells: a ScriptedLLM of this very process
    targets = [("llm", llm), ("llm.__call__", getattr(llm, "__call__", None))]
    try:
        targets += [(f"registry[{name!r}]", registry[name]) for name in ("get_weather", "calculate")]
    except Exception:
        pass
    for label, obj in targets:
        for path in ("__class__", "__dict__", "__globals__", "__module__", "__self__",
                     "__code__", "__closure__", "gi_frame", "f_globals", "_counter", "__wrapped__"):
            try:
                inner = getattr(obj, path)
                print("LEAK?", label, path, inner)
            except Exception:
                pass
    for name, value in (("calls", []), ("responses", []), ("__call__", None)):
        try:
            setattr(llm, name, value)
            print("SET?", name)
        except Exception:
            pass
    try:
        print("calls seen:", len(llm.calls), "responses:", len(llm.responses))
        llm.calls.clear()      # what the ScriptedLLM recorded must stay as recorded
    except Exception:
        pass
    return "done"
