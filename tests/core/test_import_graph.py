"""The project's import graph has no cycles, and `core` depends on no feature app.

The graph is built from the source with `ast`, imports inside functions included: a cycle held
together by a function-level import still means neither module can be understood (or imported
at the top of a file) without the other.

An edge goes from a module to every project module it names: `from labs.tasks import run_lab`
and `from labs import tasks` both point at `labs.tasks`. The parent packages a dotted import
runs on the way (`questions/grading/__init__.py` for `questions.grading.units`) are not edges,
as in import-linter and grimp.

Checked:
- modules: no cycle at all;
- apps: no cycle between the apps' domain code (models, selectors, services, tasks, ...). Views,
  URLs, admin, template tags and management commands compose several apps for one page or one
  command, so they may read another app (through its selectors) without making it a dependency;
- `core` imports no feature app, and no feature app imports another one's models (it reads
  through that app's selectors).
"""

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = (
    "accounts", "bench", "config", "core", "courses", "engines", "labs", "questions", "scripts", "workers",
)
FEATURE_APPS = ("accounts", "courses", "labs", "questions")
# Modules that compose apps for a page or a command; they sit above every app's domain code.
PRESENTATION_PARTS = ("views", "views_calculators", "urls", "admin", "templatetags", "management")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            modules[module_name(path, root)] = path
    return modules


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Project modules that `module` imports anywhere in its file (functions included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name:
                    found.add(name)
        elif isinstance(node, ast.ImportFrom):
            target = (
                _resolve_relative(module, is_package, node.level, node.module) if node.level else node.module or ""
            )
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    found.add(f"{target}.{alias.name}")
                elif target in known:
                    found.add(target)
    found.discard(module)
    return found


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    modules = project_modules(root, packages)
    known = set(modules)
    return {module: imports_of(module, path, known) for module, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path that starts and ends on the same node, or None. Iterative DFS."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    for start in sorted(graph):
        if colour[start] != WHITE:
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        colour[start] = GREY
        while stack:
            node, pending = stack[-1]
            if not pending:
                colour[node] = BLACK
                stack.pop()
                continue
            child = pending.pop(0)
            if colour.get(child, BLACK) == GREY:
                path = [entry[0] for entry in stack]
                return [*path[path.index(child) :], child]
            if colour.get(child) == WHITE:
                colour[child] = GREY
                stack.append((child, sorted(graph.get(child, ()))))
    return None


def is_presentation(module: str) -> bool:
    return any(part in PRESENTATION_PARTS for part in module.split(".")[1:])


def app_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    apps: dict[str, set[str]] = {}
    for module, targets in graph.items():
        app = module.split(".")[0]
        apps.setdefault(app, set())
        if is_presentation(module):
            continue
        apps[app].update(target.split(".")[0] for target in targets if target.split(".")[0] != app)
    return apps


def describe(cycle: list[str], graph_kind: str) -> str:
    return f"import cycle between {graph_kind}: " + " -> ".join(cycle)


def core_imports_of_feature_apps(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == "core"
        for target in targets
        if target.split(".")[0] in FEATURE_APPS
    )


def test_no_module_imports_itself_back_through_a_cycle():
    graph = import_graph(ROOT, PROJECT_PACKAGES)
    assert len(graph) > 100  # the whole project was read, not an empty folder
    cycle = find_cycle(graph)
    assert cycle is None, describe(cycle, "modules")


def test_apps_depend_on_each_other_in_one_direction():
    cycle = find_cycle(app_graph(import_graph(ROOT, PROJECT_PACKAGES)))
    assert cycle is None, describe(cycle, "apps")


def test_core_imports_no_feature_app():
    assert core_imports_of_feature_apps(import_graph(ROOT, PROJECT_PACKAGES)) == []


def other_apps_models_imported(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.split(".")[0] in FEATURE_APPS
        for target in targets
        if target.split(".")[0] in FEATURE_APPS
        and target.split(".")[0] != module.split(".")[0]
        and target.split(".")[1:2] == ["models"]
    )


def test_apps_read_each_others_data_through_selectors_not_models():
    assert other_apps_models_imported(import_graph(ROOT, PROJECT_PACKAGES)) == []


def test_lesson_page_reads_questions_and_labs_through_their_selectors():
    graph = import_graph(ROOT, PROJECT_PACKAGES)
    other_apps = {"labs", "questions"}
    reads = {target for target in graph["courses.views"] if target.split(".")[0] in other_apps}
    assert reads == {"labs.selectors", "questions.selectors"}


# --- The checker itself fails when it should -------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_planted_cycle_through_a_function_level_import_is_reported(tmp_path):
    _write(
        tmp_path,
        {
            "planted/__init__.py": "",
            "planted/services.py": "from planted.execution import run\n\ndef submit():\n    return run()\n",
            "planted/execution.py": "def run():\n    from planted import tasks\n    return tasks\n",
            "planted/tasks.py": "from .services import submit\n",
            "planted/models.py": "",
        },
    )
    graph = import_graph(tmp_path, ["planted"])
    assert graph["planted.execution"] == {"planted.tasks"}
    assert graph["planted.tasks"] == {"planted.services"}
    cycle = find_cycle(graph)
    assert cycle is not None
    assert describe(cycle, "modules") == (
        "import cycle between modules: planted.execution -> planted.tasks -> planted.services -> planted.execution"
    )


def test_a_planted_cycle_between_apps_and_a_core_to_feature_import_are_reported(tmp_path):
    _write(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/health.py": "import courses.models\n",
            "courses/__init__.py": "",
            "courses/models.py": "",
            "courses/selectors.py": "from labs.models import Lab\n",
            "courses/views.py": "from labs import selectors\n",
            "labs/__init__.py": "",
            "labs/models.py": "from courses.models import Base\n",
            "labs/selectors.py": "",
        },
    )
    graph = import_graph(tmp_path, ["core", "courses", "labs"])
    assert find_cycle(graph) is None  # no module cycle: only the apps knot
    assert find_cycle(app_graph(graph)) == ["courses", "labs", "courses"]
    assert core_imports_of_feature_apps(graph) == ["core.health imports courses.models"]
    assert other_apps_models_imported(graph) == [
        "courses.selectors imports labs.models",
        "labs.models imports courses.models",
    ]


def test_a_view_reading_another_app_is_not_an_app_dependency(tmp_path):
    _write(
        tmp_path,
        {
            "courses/__init__.py": "",
            "courses/models.py": "",
            "courses/views.py": "from labs.selectors import labs_for_lesson\n",
            "labs/__init__.py": "",
            "labs/models.py": "from courses.models import Base\n",
            "labs/selectors.py": "",
        },
    )
    assert find_cycle(app_graph(import_graph(tmp_path, ["courses", "labs"]))) is None
