# HOSTILE: lecture-ReAct-lab softmax: a right softmax brought in as compiled code (what a student can read back from the student edition's .pyc files), turned into a function by marshal; the grader's process refuses it (autograder/inside/guard.py) and the instructor's side flags it (instructor/hidden_code.py)
import base64
import marshal
import types

BLOB = (
    '4wEAAAAAAAAAAAAAAAUAAAADAAAA88QAAACXAGQBZABsAH0BfAGgAQAAAAAAAAAAAAAAAAAAAAAAAAAAfAB0BAAA'
    'AAAAAAAAAACsAqYCAACrAgAAAAAAAAAAfQB8AaADAAAAAAAAAAAAAAAAAAAAAAAAAAB8AHwAoAQAAAAAAAAAAAAA'
    'AAAAAAAAAAAAAKYAAACrAAAAAAAAAAAAegoAAKYBAACrAQAAAAAAAAAAfQJ8AnwCoAUAAAAAAAAAAAAAAAAAAAAA'
    'AAAAAKYAAACrAAAAAAAAAAAAegsAAFMAKQNO6QAAAAApAdoFZHR5cGUpBtoFbnVtcHnaB2FzYXJyYXnaBWZsb2F0'
    '2gNleHDaA21heNoDc3VtKQPaAXraAm5w2gFlcwMAAAAgICD6EmxyZWFjdC9zYW1wbGluZy5wedoHc29mdG1heHIO'
    'AAAAAQAAAHNSAAAAgADYBBbQBBbQBBbQBBbYCAqPCooKkDGdRYgK0Qgi1AgigEHYCAqPBooGiHGQMZc1kjWRN5Q3'
    'iXvRCBvUCBuAQdgLDIhxj3WKdYl3jHeJO9AEFvMAAAAA'
)
softmax = types.FunctionType(marshal.loads(base64.b64decode(''.join(BLOB))), globals())
