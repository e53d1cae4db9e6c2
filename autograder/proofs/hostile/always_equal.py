# HOSTILE: lecture-ReAct-exercises ex01_softmax: answer objects whose __eq__ always returns True
class Anything(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


softmax_answer = Anything([0.25, 0.25, 0.25, 0.25])
softmax_shifted = Anything([0.25, 0.25, 0.25, 0.25])
