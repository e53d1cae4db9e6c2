"""The narrow channel between the trusted process and the student process: plain data only.

- ``link``      requests and replies that nest (a test calls ``run_agent``, which calls the
                test's ``ScriptedLLM``); ``Link``
- ``pipe``      length-prefixed JSON messages over two pipes, with their limits
- ``codec``     values to tagged JSON and back (what crosses, and how)
- ``handles``   the stand-ins for the other side's objects
- ``mirror``    a test's random Generator, mirrored by a log its owner replays
- ``records``   the message types of ``lreact.messages`` and allowed exceptions, by name
- ``numeric``   numpy arrays and scalars of every dtype, exactly
- ``quickkey``  argument keys for caches, without encoding
"""
