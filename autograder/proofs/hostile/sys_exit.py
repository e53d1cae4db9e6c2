# HOSTILE: lecture-ReAct-exercises ex01_softmax: sys.exit() in the answer cell
import sys
softmax_answer = [0.25, 0.25, 0.25, 0.25]
sys.exit(0)
