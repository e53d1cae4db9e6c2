# HOSTILE: lecture-ReAct-exercises ex01_softmax: os._exit() kills the kernel
import os
os._exit(0)
