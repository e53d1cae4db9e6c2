# HOSTILE: lecture-ReAct-exercises ex01_softmax: an infinite loop that also ignores the interrupt
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    pass
