# HOSTILE: lecture-ReAct-exercises ex01_softmax: prints 100 MB of output
line = "x" * (1024 * 1024 - 1)
for _ in range(100):
    print(line)
