# WRONG: wraps the course's reference loop instead of writing it
import lreact.harness


def run_agent_hardened(user_input, llm, tools, execute, *, history=None, max_steps=8,
                       max_format_errors=3, max_repeats=3, format_error_fn=None, repeat_count_fn=None,
                       split_reasoning_fn=None):
    """The hardened loop, borrowed."""
    return lreact.harness.run_agent_hardened(user_input, llm, tools, execute, history=history,
                                             max_steps=max_steps,
                                             max_format_errors=max_format_errors,
                                             max_repeats=max_repeats,
                                             system_prompt=SYSTEM_PROMPT)
