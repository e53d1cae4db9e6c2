# HOSTILE: lecture-ReAct-exercises ex01_softmax: IPython input and AST transformers that blank every later cell (the test cells)
import ast

ip = get_ipython()  # noqa: F821 - IPython provides it
ip.input_transformers_cleanup.append(lambda lines: [])


class Blank(ast.NodeTransformer):
    def visit_Module(self, node):
        node.body = []
        return node


ip.ast_transformers.append(Blank())
