"""detectors/ is pure: importing any detector module pulls in no I/O framework or pipeline code,
and no detector source reads the environment."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import detectors

FORBIDDEN = ("faust", "kafka", "aiokafka", "sqlalchemy", "prometheus_client", "pipeline",
             "starlette", "uvicorn", "psycopg", "grafana_client")
DETECTORS_DIR = Path(detectors.__file__).parent


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages([str(DETECTORS_DIR)], "detectors."))


def test_detector_modules_import_no_io_frameworks() -> None:
    code = (
        "import importlib, sys, json\n"
        f"mods = {_modules()!r}\n"
        "for m in mods: importlib.import_module(m)\n"
        f"bad = sorted({{n.split('.')[0] for n in sys.modules}} & set({FORBIDDEN!r}))\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_detectors_never_read_the_environment() -> None:
    pattern = re.compile(r"\bos\.environ\b|\bos\.getenv\b|\bgetenv\(")
    offenders = [str(p) for p in DETECTORS_DIR.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


# -- the house: one package per detector, training outside detectors/, no import circles --------

ROOT = DETECTORS_DIR.parent
PACKAGES = ("detectors", "pipeline", "dashboards")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Every import between our modules, wherever it stands: at the top, inside a function
    (lazy), or under ``if TYPE_CHECKING`` (a circle is a circle even when Python tolerates it)."""
    files = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(resolve(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:  # "from pkg import module" imports the module
                    sub = f"{node.module}.{a.name}"
                    targets.add(sub if sub in files else resolve(node.module))
        graph[mod] = {t for t in targets if t is not None and t != mod}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                out.append(sorted([v, *comp]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles() -> None:
    graph = _import_graph()
    assert len(graph) > 100  # the walk found the code
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_each_detector_is_one_package() -> None:
    from detectors import registry

    for name in registry.REGISTRY:
        module = registry.module_of(name)
        assert module.split(".")[:2] == ["detectors", name], (name, module)
        assert (DETECTORS_DIR / name / "__init__.py").is_file()
    loose = sorted(p.stem for p in DETECTORS_DIR.glob("*.py"))
    assert loose == ["__init__", "base", "features", "onnx_backend", "registry"]


def test_no_training_code_under_detectors() -> None:
    """Builders and trainers (command-line entry points, argument parsers, model fitting) live
    in ``pipeline/training``; detectors only load what they produce."""
    pattern = re.compile(r"__name__ == .__main__.|\bargparse\b|\.fit\(")
    offenders = [str(p.relative_to(ROOT)) for p in DETECTORS_DIR.rglob("*.py")
                 if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
