"""Measures of the package's shape (issue 19): import cycles, function and module lengths, and in how many
source files each scenario option's name is spelled. ``tests/test_code_shape.py`` holds them to their limits."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vramdesk"
MAX_FUNCTION_LINES = 120
MAX_MODULE_LINES = 800


def import_cycles() -> list[list[str]]:
    """Strongly connected groups of vramdesk modules (type-checking and function-level imports included)."""
    graph = grimp.build_graph("vramdesk")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return groups


def source_files() -> Iterator[Path]:
    yield from sorted(PACKAGE.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def module_lengths() -> dict[str, int]:
    return {_rel(p): len(p.read_text(encoding="utf-8").splitlines()) for p in source_files()}


def function_lengths() -> dict[str, int]:
    """``path:Qualified.name`` -> lines, for every function and method (nested ones on their own)."""
    out: dict[str, int] = {}
    for path in source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def walk(node: ast.AST, prefix: str, path: Path = path) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                        out[f"{_rel(path)}:{name}"] = (child.end_lineno or child.lineno) - start + 1
                    walk(child, name + ".")
                else:
                    walk(child, prefix)

        walk(tree, "")
    return out


def option_names() -> list[str]:
    """Every field of the scenario's workload, hardware and parallelism models (the options a user sets)."""
    from vramdesk.core import scenario as s

    names: set[str] = set()
    for model in (s.InferenceWorkload, s.FinetuneWorkload, s.VllmOptions, s.LlamaCppOptions, s.Hardware, s.Parallelism):
        names |= {n for n in model.model_fields if n != "kind"}
    return sorted(names)


def option_spellings() -> dict[str, list[str]]:
    """Option name -> the source files that spell it (snake_case or --kebab-case, as a whole word)."""
    texts = {_rel(p): p.read_text(encoding="utf-8") for p in source_files()}
    out: dict[str, list[str]] = {}
    for name in option_names():
        kebab = name.replace("_", "-")
        pattern = re.compile(rf"(?<![\w-])(?:{re.escape(name)}|--{re.escape(kebab)})(?![\w-])")
        out[name] = sorted(f for f, text in texts.items() if pattern.search(text))
    return out


if __name__ == "__main__":
    print("cycles:", import_cycles())
    for k, v in sorted(module_lengths().items(), key=lambda kv: -kv[1]):
        if v > MAX_MODULE_LINES:
            print(f"module {k}: {v}")
    for k, v in sorted(function_lengths().items(), key=lambda kv: -kv[1]):
        if v > MAX_FUNCTION_LINES:
            print(f"function {k}: {v}")
    for k, files in sorted(option_spellings().items(), key=lambda kv: -len(kv[1])):
        print(f"option {k}: {len(files)} files")
