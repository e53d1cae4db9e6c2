"""What the lecture shows and measures: widgets, figures and live measurements on a real model.

Imports anything in lreact (the concepts, ``engines``, ``actions``); nothing imports it but
the notebooks and ``engines/setup.py``'s drift check.

- ``widgets``          the lecture's interactive widgets, one call each; ``figures`` their
                       pictures; ``canvas`` PNG bytes and a fast redraw; ``examples`` the
                       lecture's example next-token distributions
- ``next_token``       Part I, a real next-token distribution for the widgets (any backend)
- ``lens``             Part I, the probability lens; ``lens_reading`` what it reads (the
                       embedded model, or a server's top-k)
- ``recordings``       recorded real-model runs; ``drift`` replays them on the configured model
- ``student_decode``   first lab, A.8: the student's sampler and decoder on a real model
- ``tool_call_rates``  second lab, C.3: does sampling break tool calls?
- ``methods``          second lab, D.2: ReAct against Act and CoT
- ``context_budget``   Part IV, the engine's token counts and its prompt cache measured
- ``workload``         the overview's time estimate per notebook
"""
