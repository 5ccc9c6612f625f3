"""Procedural bug operators in the spirit of SWE-smith, on libcst (exact source round-trip).

Each operator names the nodes it can change (``sites``) and how to change one (``apply``). A
mutation is (file, operator, site index); the same triple and seed always give the same diff.
Only code inside function bodies is mutated, as SWE-smith does (entities are functions).
"""

from __future__ import annotations

import difflib
import hashlib
import random
from dataclasses import dataclass

import libcst as cst


class Operator:
    name: str = ""
    description: str = ""

    def sites(self, node: cst.CSTNode) -> int:
        """How many distinct mutations this operator can make at ``node`` itself."""
        return 0

    def apply(self, node: cst.CSTNode, k: int, rng: random.Random) -> cst.CSTNode:
        raise NotImplementedError


class InvertIf(Operator):
    name, description = "invert_if", "swap the bodies of an if/else"

    def sites(self, node):
        return int(isinstance(node, cst.If) and isinstance(node.orelse, cst.Else))

    def apply(self, node, k, rng):
        return node.with_changes(body=node.orelse.body, orelse=node.orelse.with_changes(body=node.body))


_CMP = {cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal, cst.LessThan: cst.LessThanEqual,
        cst.LessThanEqual: cst.LessThan, cst.GreaterThan: cst.GreaterThanEqual,
        cst.GreaterThanEqual: cst.GreaterThan, cst.In: cst.NotIn, cst.NotIn: cst.In, cst.Is: cst.IsNot,
        cst.IsNot: cst.Is}


class ChangeCompare(Operator):
    name, description = "change_compare", "change a comparison operator within its family"

    def sites(self, node):
        return int(isinstance(node, cst.Comparison) and len(node.comparisons) == 1
                   and type(node.comparisons[0].operator) in _CMP)

    def apply(self, node, k, rng):
        target = node.comparisons[0]
        op = target.operator
        new = _CMP[type(op)]()
        if hasattr(op, "whitespace_before"):
            new = new.with_changes(whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after)
        return node.with_changes(comparisons=[target.with_changes(operator=new)])


_ARITH = {cst.Add: [cst.Subtract], cst.Subtract: [cst.Add], cst.Multiply: [cst.Divide, cst.FloorDivide],
          cst.Divide: [cst.Multiply, cst.FloorDivide], cst.FloorDivide: [cst.Divide, cst.Modulo],
          cst.Modulo: [cst.FloorDivide], cst.BitAnd: [cst.BitOr], cst.BitOr: [cst.BitAnd, cst.BitXor],
          cst.BitXor: [cst.BitOr], cst.LeftShift: [cst.RightShift], cst.RightShift: [cst.LeftShift]}


def _same_ws(new: cst.CSTNode, old: cst.CSTNode) -> cst.CSTNode:
    return new.with_changes(whitespace_before=old.whitespace_before, whitespace_after=old.whitespace_after)


class ChangeOperator(Operator):
    name, description = "change_operator", "change an arithmetic/bitwise operator within its family"

    def sites(self, node):
        return int(isinstance(node, cst.BinaryOperation) and type(node.operator) in _ARITH)

    def apply(self, node, k, rng):
        new = rng.choice(_ARITH[type(node.operator)])()
        return node.with_changes(operator=_same_ws(new, node.operator))


class SwapOperands(Operator):
    name, description = "swap_operands", "swap the operands of a binary operation or comparison"

    def sites(self, node):
        if isinstance(node, cst.BinaryOperation):
            return 1
        return int(isinstance(node, cst.Comparison) and len(node.comparisons) == 1
                   and type(node.comparisons[0].operator) in (cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                                                                cst.GreaterThanEqual, cst.Equal, cst.NotEqual))

    def apply(self, node, k, rng):
        if isinstance(node, cst.BinaryOperation):
            return node.with_changes(left=node.right, right=node.left)
        comp = node.comparisons[0]
        return node.with_changes(left=comp.comparator, comparisons=[comp.with_changes(comparator=node.left)])


class ChangeConstant(Operator):
    name, description = "change_constant", "change an integer literal by one"

    def sites(self, node):
        return int(isinstance(node, cst.Integer))

    def apply(self, node, k, rng):
        value = int(node.value.replace("_", ""), 0)
        new = value + rng.choice((-1, 1)) if value != 0 else 1
        return node.with_changes(value=str(new))


class BreakChain(Operator):
    name, description = "break_chain", "drop the middle operand of a chained expression (a+b+c -> a+c)"

    def sites(self, node):
        return int(isinstance(node, cst.BinaryOperation) and isinstance(node.left, cst.BinaryOperation))

    def apply(self, node, k, rng):
        return node.with_changes(left=node.left.left)


class FlipBoolean(Operator):
    name, description = "flip_boolean", "swap and/or, or drop a `not`"

    def sites(self, node):
        return int(isinstance(node, cst.BooleanOperation)
                   or (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)))

    def apply(self, node, k, rng):
        if isinstance(node, cst.UnaryOperation):
            return node.expression
        new = cst.Or() if isinstance(node.operator, cst.And) else cst.And()
        return node.with_changes(operator=_same_ws(new, node.operator))


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString))


class _BlockOperator(Operator):
    """Operators that remove or rewrite one statement of an indented block."""

    def matches(self, stmt: cst.CSTNode) -> bool:
        raise NotImplementedError

    def _indices(self, node) -> list[int]:
        if not isinstance(node, cst.IndentedBlock):
            return []
        return [i for i, s in enumerate(node.body) if self.matches(s)]

    def sites(self, node):
        return len(self._indices(node))

    def replacement(self, stmt) -> list[cst.BaseStatement]:
        return []

    def apply(self, node, k, rng):
        i = self._indices(node)[k]
        body = [*node.body[:i], *self.replacement(node.body[i]), *node.body[i + 1:]]
        if not [s for s in body if not _is_docstring(s)]:
            body.append(cst.SimpleStatementLine([cst.Pass()]))
        return node.with_changes(body=body)


class RemoveAssignment(_BlockOperator):
    name, description = "remove_assignment", "delete an assignment statement"

    def matches(self, stmt):
        return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Assign | cst.AugAssign)
                or isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.AnnAssign) and stmt.body[0].value is not None)


class RemoveCondition(_BlockOperator):
    name, description = "remove_condition", "delete an if statement that has no else"

    def matches(self, stmt):
        return isinstance(stmt, cst.If) and stmt.orelse is None


class RemoveLoop(_BlockOperator):
    name, description = "remove_loop", "delete a for/while loop"

    def matches(self, stmt):
        return isinstance(stmt, cst.For | cst.While)


class RemoveWrapper(_BlockOperator):
    name, description = "remove_wrapper", "replace a with/try statement by its body"

    def matches(self, stmt):
        return isinstance(stmt, cst.With | cst.Try)

    def replacement(self, stmt):
        return list(stmt.body.body)


class ShuffleStatements(Operator):
    name, description = "shuffle_statements", "shuffle the statements of a function body"

    def sites(self, node):
        if not isinstance(node, cst.FunctionDef) or not isinstance(node.body, cst.IndentedBlock):
            return 0
        stmts = [s for s in node.body.body if not _is_docstring(s)]
        return int(len(stmts) >= 3)

    def apply(self, node, k, rng):
        body = list(node.body.body)
        head = body[:1] if body and _is_docstring(body[0]) else []
        rest = body[len(head):]
        for _ in range(10):
            shuffled = rest[:]
            rng.shuffle(shuffled)
            if shuffled != rest:
                break
        return node.with_changes(body=node.body.with_changes(body=[*head, *shuffled]))


OPERATORS: dict[str, Operator] = {op.name: op for op in (
    InvertIf(), ChangeCompare(), ChangeOperator(), SwapOperands(), ChangeConstant(), BreakChain(), FlipBoolean(),
    RemoveAssignment(), RemoveCondition(), RemoveLoop(), RemoveWrapper(), ShuffleStatements())}


class _Walker(cst.CSTTransformer):
    """Counts an operator's sites inside functions and (optionally) applies the ``target``-th one."""

    def __init__(self, op: Operator, target: int = -1, rng: random.Random | None = None) -> None:
        super().__init__()
        self.op, self.target, self.rng = op, target, rng or random.Random(0)
        self.count = 0
        self.depth = 0
        self.function = ""
        self._names: list[str] = []
        self.hit_function = ""

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.FunctionDef):
            self.depth += 1
            self._names.append(node.name.value)
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        is_func = isinstance(original, cst.FunctionDef)
        inside = self.depth > 0
        if inside:
            n = self.op.sites(original)
            if n and self.count <= self.target < self.count + n:
                self.hit_function = self._names[-1]
                updated = self.op.apply(updated, self.target - self.count, self.rng)
            self.count += n
        if is_func:
            self.depth -= 1
            self._names.pop()
        return updated


def count_sites(module: cst.Module, op: Operator) -> int:
    walker = _Walker(op)
    module.visit(walker)
    return walker.count


@dataclass(frozen=True)
class Mutation:
    file: str
    operator: str
    site: int
    function: str
    original: str
    mutated: str

    def diff(self) -> str:
        lines = difflib.unified_diff(self.original.splitlines(keepends=True), self.mutated.splitlines(keepends=True),
                                     f"a/{self.file}", f"b/{self.file}")
        out = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return f"diff --git a/{self.file} b/{self.file}\n{out}"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.diff().encode()).hexdigest()[:8]


def mutate(source: str, file: str, operator: str, site: int, seed: int) -> Mutation | None:
    """Apply one mutation; None if it does not change the code or breaks its syntax."""
    op = OPERATORS[operator]
    module = cst.parse_module(source)
    walker = _Walker(op, site, random.Random(f"{seed}:{file}:{operator}:{site}"))
    new = module.visit(walker).code
    if new == source:
        return None
    try:
        compile(new, file, "exec")
    except SyntaxError:
        return None
    return Mutation(file, operator, site, walker.hit_function, source, new)


def enumerate_sites(sources: dict[str, str]) -> list[tuple[str, str, int]]:
    """Every (file, operator, site) available in ``sources`` (file -> text), in a stable order."""
    out = []
    for file in sorted(sources):
        try:
            module = cst.parse_module(sources[file])
        except cst.ParserSyntaxError:
            continue
        for name, op in OPERATORS.items():
            out += [(file, name, i) for i in range(count_sites(module, op))]
    return out


def candidate_order(sites: list[tuple[str, str, int]], seed: int) -> list[tuple[str, str, int]]:
    """Deterministic, operator-balanced order: round-robin over operators, each list shuffled."""
    rng = random.Random(seed)
    by_op: dict[str, list[tuple[str, str, int]]] = {}
    for s in sites:
        by_op.setdefault(s[1], []).append(s)
    queues = []
    for name in sorted(by_op):
        q = by_op[name][:]
        rng.shuffle(q)
        queues.append(q)
    rng.shuffle(queues)
    out = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop())
    return out
