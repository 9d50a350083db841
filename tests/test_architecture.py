"""Dependencies inside the package run one way: the sub-packages form layers (`LAYERS`, bottom first) and a module
imports only from its own layer or those below it; no import cycle (module-level or inside functions); the CLI
(`sweep.app`) is imported by no module; each sub-package has a public face (``__all__``), and the research code
beside the package (``research/findings``) imports nothing of it but the faces of `sweep.report` and `sweep.stats`."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "sweep"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module of ``from <node.module> import ...``, relative imports resolved against `module`."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str) -> set[str]:
    """Every `sweep.*` module that `module` imports anywhere in its source: at module level, inside functions,
    under ``if TYPE_CHECKING``. ``from a import b`` counts as importing ``a.b`` when that is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source)
    return {name for name in found if name in MODULES and name != module}


GRAPH = {module: imports_of(module) for module in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that ends where it starts, or None."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once fully explored
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


# The floor plan, bottom first: each layer is a set of root modules or sub-packages of `sweep`. A module may import
# from its own layer and the layers below it, never from one above.
LAYERS: list[set[str]] = [
    {"sweep", "sweep.errors", "sweep.loggers", "sweep.names", "sweep.signals"},
    {"sweep.config"},
    {"sweep.inputs"},
    {"sweep.losses"},
    {"sweep.stats"},
    {"sweep.evaluation"},
    {"sweep.training"},
    {"sweep.tracking"},
    {"sweep.study"},
    {"sweep.report"},
    {"sweep.evaluate", "sweep.app", "sweep.study_command", "sweep.__main__"},
]
# The only modules at the package root: the entry points and what every layer shares (names, signals, errors, the
# interface a trial logs through).
ROOT_MODULES = {"sweep.__main__", "sweep.app", "sweep.errors", "sweep.evaluate", "sweep.names", "sweep.signals"}
ROOT_MODULES |= {"sweep.study_command"}
ROOT_MODULES |= {"sweep.loggers"}
SUB_PACKAGES = ["sweep.config", "sweep.tracking", "sweep.inputs", "sweep.stats", "sweep.evaluation", "sweep.training"]
SUB_PACKAGES += ["sweep.study", "sweep.losses", "sweep.report"]
LAZY_FACES = ["sweep.report", "sweep.stats", "sweep.study", "sweep.evaluation", "sweep.training", "sweep.tracking"]
LAZY_FACES += ["sweep.inputs", "sweep.losses"]  # faces that import each public name from its module on first use
# research code beside the package (the findings page, the notebooks' helper and their code cells): it reaches the
# package through these faces only, as a user's code would
NOTEBOOKS_DIR = PACKAGE_DIR.parent / "research" / "notebooks"
RESEARCH_DIR = PACKAGE_DIR.parent / "research" / "findings"
RESEARCH_FACES = {"sweep.report", "sweep.stats", "sweep.errors"}  # errors: the one exception hierarchy


def unit_of(module: str) -> str:
    """The layer unit of a module: its sub-package (`sweep.study.setup` -> `sweep.study`) or the root module itself."""
    return ".".join(module.split(".")[:2])


def layer_of(module: str) -> int:
    return next(index for index, layer in enumerate(LAYERS) if unit_of(module) in layer)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module in a higher layer, as 'importer -> imported'."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def test_the_walk_sees_the_package_and_its_imports():
    assert {"sweep.config.checks", "sweep.names", "sweep.app", "sweep.losses", "sweep.losses.mnrl"} <= set(MODULES)
    assert "sweep.study" in GRAPH["sweep.study_command"] and "sweep.losses.spec" in GRAPH["sweep.losses.mnrl"]
    assert "sweep.study.run_loop" in GRAPH["sweep.study"], "a face's names are imports of their modules (for mypy)"


def test_every_module_sits_in_a_layer_and_only_entry_points_and_names_stay_at_the_root():
    assert not [module for module in MODULES if not any(unit_of(module) in layer for layer in LAYERS)]
    root = {module for module, path in MODULES.items() if module.count(".") == 1 and path.name != "__init__.py"}
    assert root == ROOT_MODULES, sorted(root ^ ROOT_MODULES)


def test_imports_run_down_the_layers():
    assert upward_imports(GRAPH) == []


def test_an_upward_import_is_reported():
    graph = {"sweep.config.checks": {"sweep.study.setup"}, "sweep.study.setup": {"sweep.config.checks"}}
    assert upward_imports(graph) == ["sweep.config.checks -> sweep.study.setup"]


@pytest.mark.parametrize("package", SUB_PACKAGES)
def test_each_sub_package_says_what_it_owns_and_exports_its_public_names(package):
    tree = ast.parse(MODULES[package].read_text())
    assert ast.get_docstring(tree), f"{package}/__init__.py has no docstring"
    module = importlib.import_module(package)
    assert module.__all__ and all(hasattr(module, name) for name in module.__all__), package


@pytest.mark.parametrize("package", LAZY_FACES)
def test_a_lazy_face_knows_where_each_public_name_lives(package):
    module = importlib.import_module(package)
    assert sorted(module._MODULE_OF) == sorted(module.__all__), package
    for name, home in module._MODULE_OF.items():
        assert hasattr(importlib.import_module(f"{package}.{home}"), name), f"{package}.{home} has no {name}"


@pytest.mark.parametrize("package", LAZY_FACES)
def test_a_public_name_stays_itself_after_its_module_is_imported(package):
    """`sweep.stats.scale_verdicts` is the function even once every module of the face was imported: no public name
    is also a submodule's (the import system binds a submodule on its package, over the lazy name; the modules were
    renamed, `verdicts` and `bootstrap`, instead of swapping the face's class). A fresh interpreter imports every
    home first, then reads the face."""
    code = (
        f"import importlib, {package} as face\n"
        f"for home in set(face._MODULE_OF.values()): importlib.import_module('{package}.' + home)\n"
        "wrong = [n for n, h in face._MODULE_OF.items()\n"
        f"         if getattr(face, n) is not getattr(importlib.import_module('{package}.' + h), n)]\n"
        "assert not wrong, wrong\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def research_sources() -> dict[str, str]:
    """{name: Python source} of the research code: the findings page's modules, the notebooks' helper and each
    notebook's code cells (IPython's ``%`` and ``!`` lines left out)."""
    sources = {path.name: path.read_text() for path in [*RESEARCH_DIR.glob("*.py"), *NOTEBOOKS_DIR.glob("*.py")]}
    for notebook in sorted(NOTEBOOKS_DIR.glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        code = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
        lines = "\n".join(code).splitlines()
        sources[notebook.name] = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
    return sources


def test_the_research_code_reaches_the_package_only_through_its_public_faces():
    sources = research_sources()
    assert {"page.py", "literature.py", "redraw.py", "mnrl_scale.ipynb"} <= set(sources)
    reached = {
        (name, node.module if isinstance(node, ast.ImportFrom) else alias.name)
        for name, source in sources.items()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
        for alias in node.names
    }
    inside = {(name, module) for name, module in reached if module and module.split(".")[0] == "sweep"}
    assert inside and all(module in RESEARCH_FACES for _, module in inside), sorted(inside)


# A module reaches another sub-package through its face (`from sweep.stats import paired_bootstrap`), never past it
# (`from sweep.stats.bootstrap import ...`); inside its own package it imports module to module. These modules are
# imported whole, as namespaces of functions, through their package (`from sweep.config import search_space`):
NAMESPACE_MODULES = {"sweep.config.search_space", "sweep.config.multirun", "sweep.inputs.data"}
NAMESPACE_MODULES |= {"sweep.evaluation.extra_sets", "sweep.training.kept_models", "sweep.training.model_card"}
NAMESPACE_MODULES |= {"sweep.tracking.disk_use", "sweep.tracking.ui_links", "sweep.tracking.logged_models"}
NAMESPACE_MODULES |= {"sweep.study.grid_queue", "sweep.study.recorded_answer", "sweep.study.validation"}


def past_the_face(module: str, source: str) -> tuple[list[str], set[str]]:
    """The imports in `source` (module `module`) of another sub-package's modules past its face, as
    'module:line target', and the modules it imports whole through another package's face."""
    deep, whole = [], set()
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            targets = [node.module]
            whole |= {
                f"{node.module}.{alias.name}"
                for alias in node.names
                if f"{node.module}.{alias.name}" in MODULES
                and unit_of(node.module) in SUB_PACKAGES
                and unit_of(node.module) != unit_of(module)
            }
        for target in targets:
            crosses = target.startswith("sweep.") and unit_of(target) != unit_of(module)
            if crosses and target.count(".") >= 2 and unit_of(target) in SUB_PACKAGES:
                deep.append(f"{module}:{node.lineno} {target}")
    return deep, whole


def test_a_module_reaches_another_package_through_its_face():
    found = [past_the_face(module, path.read_text()) for module, path in MODULES.items()]
    deep = [where for imports, _ in found for where in imports]
    assert deep == [], f"{len(deep)} imports past a face: {deep}"
    assert set().union(*(whole for _, whole in found)) == NAMESPACE_MODULES


def test_the_face_scan_sees_an_import_past_a_face():
    source = "from sweep.stats.bootstrap import bullets\nfrom sweep.stats import pool\nimport sweep.study.race\n"
    deep, whole = past_the_face("sweep.report.forest", source)
    assert deep == ["sweep.report.forest:1 sweep.stats.bootstrap", "sweep.report.forest:3 sweep.study.race"]
    assert past_the_face("sweep.stats.pooling", "from sweep.stats.bootstrap import x\n") == ([], set())
    assert past_the_face("sweep.app", "from sweep.study import grid_queue\n") == ([], {"sweep.study.grid_queue"})


def test_find_cycle_reports_the_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_package():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


BOTTOM = [("sweep.names", set()), ("sweep.errors", set()), ("sweep.config.schema", set())]
BOTTOM += [("sweep.config.checks", {"sweep.errors", "sweep.names", "sweep.config.schema"})]  # the checks of its types


@pytest.mark.parametrize(("module", "allowed"), BOTTOM)
def test_the_bottom_layer_imports_nothing_above_it(module, allowed):
    assert GRAPH[module] <= allowed, f"{module} imports {sorted(GRAPH[module] - allowed)}"


def test_only_the_entry_point_imports_the_cli():
    importers = sorted(module for module, targets in GRAPH.items() if "sweep.app" in targets)
    assert importers == ["sweep.__main__"], importers


# The config stops at the entry points: `sweep.app` types the composed config by its schema once and checks it in one
# validation pass; below it a function takes the section or the values it uses. These are the functions that still
# take the whole config (`cfg`, the root's name throughout the package, or a `SweepConfig`): the Hydra task, the
# validation pass, one trial's own config (`trial_config`: a point's values set and checked, which the pass builds for
# every grid point and the run loop for every trial) and the study's opening (the command's,
# `sweep.study_command.open_study`, which the task imports once the config is valid, and the runner's).
MAX_WHOLE_CONFIG = 5
ENTRY_POINTS = {"sweep.app", "sweep.study_command", "sweep.evaluate", "sweep.__main__"}


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]


def whole_config_functions() -> list[str]:
    """Every function of the package with a parameter named ``cfg`` or annotated ``SweepConfig``."""
    found = []
    for module, path in MODULES.items():
        for node in _functions(ast.parse(path.read_text())):
            params = [param for param in _parameters(node) if param is not None]
            annotations = [ast.unparse(param.annotation) for param in params if param.annotation is not None]
            if any(param.arg == "cfg" for param in params) or any("SweepConfig" in a for a in annotations):
                found.append(f"{module}.{node.name}")
    return found


def _names_dictconfig(annotation: ast.expr | None) -> bool:
    """Whether an annotation names OmegaConf's `DictConfig` (alone or in a union, a container or a string)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        return _names_dictconfig(ast.parse(annotation.value, mode="eval").body)
    return any(
        (isinstance(node, ast.Name) and node.id == "DictConfig")
        or (isinstance(node, ast.Attribute) and node.attr == "DictConfig")
        for node in ast.walk(annotation)
    )


def bare_dictconfig_annotations(source: str, module: str) -> list[str]:
    """Every parameter and class field of `source` annotated with a bare `DictConfig`, as ``module.where.name``."""
    tree = ast.parse(source)
    found = [
        f"{module}.{function.name}({param.arg})"
        for function in _functions(tree)
        for param in _parameters(function)
        if param is not None and _names_dictconfig(param.annotation)
    ]
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for field in cls.body:
            if isinstance(field, ast.AnnAssign) and _names_dictconfig(field.annotation):
                found.append(f"{module}.{cls.name}.{ast.unparse(field.target)}")
    return found


def test_the_config_stops_at_the_entry_points():
    found = whole_config_functions()
    assert {"sweep.app.run", "sweep.study.lifecycle.open_sweep"} <= set(found), "the scan sees the entry points"
    assert len(found) <= MAX_WHOLE_CONFIG, f"{len(found)} functions take the whole config: {found}"


def test_below_the_entry_points_every_section_is_typed_by_the_schema():
    """No parameter or field below `sweep.app` and `sweep.evaluate` is a bare `DictConfig`: each names the schema's
    class of the section it reads (`sweep.config.schema`), so that mypy checks the keys it reads."""
    found = [
        where
        for module, path in MODULES.items()
        if module not in ENTRY_POINTS
        for where in bare_dictconfig_annotations(path.read_text(), module)
    ]
    assert found == [], f"{len(found)} bare DictConfig annotations: {found}"


def test_the_scan_finds_a_bare_dictconfig():
    source = (
        "def f(a: DictConfig, b: 'DictConfig | None', c: StudyConfig) -> DictConfig: ...\n"
        "class C:\n    cfg: omegaconf.DictConfig\n    study: StudyConfig\n"
    )
    assert bare_dictconfig_annotations(source, "m") == ["m.f(a)", "m.f(b)", "m.C.cfg"]


def test_a_trial_reads_its_own_settings_not_the_study():
    """One trial (`sweep.training.trial`) reads its `TrialSettings`: never the study's search space or name."""
    tree = ast.parse(MODULES["sweep.training.trial"].read_text())
    study_reads = sorted(
        {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)} & {"study", "search_space"}
    )
    assert study_reads == [], study_reads
    settings = importlib.import_module("sweep.training.trial_settings").TrialSettings
    assert not {"study", "search_space", "name"} & set(settings.__dataclass_fields__)


# Tracking as a callback: a trial and its evaluations log through `sweep.loggers.TrialLogger` (the run the study hands
# the trial), and the study tracks itself through `sweep.study.StudyLogger` (its parent run, each trial's run, the kept
# models), which sweep.tracking implements with MLflow (`MlflowStudyLogger`). Tracking sits above training, so nothing
# below it can import it (`LAYERS`); the study names it once, through its face, for the default `open_sweep` uses.
STUDY_TRACKING_IMPORTS = ["sweep.study.lifecycle -> sweep.tracking"]
NO_MLFLOW = ("sweep.study", "sweep.training", "sweep.evaluation", "sweep.stats")


def tracking_imports(importers: tuple[str, ...]) -> list[str]:
    """Every import of a `sweep.tracking` module by a module of `importers` (packages or modules)."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if any(module == unit or module.startswith(f"{unit}.") for unit in importers)
        for target in targets
        if unit_of(target) == "sweep.tracking"
    )


def runtime_library_imports(source: str, library: str) -> list[int]:
    """The lines of `source` that import `library` (or a module of it) when they run: those under
    ``if TYPE_CHECKING:`` are annotations only."""
    tree = ast.parse(source)
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    names = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.append((node.lineno, node.module or ""))
    return [line for line, name in names if name == library or name.startswith(f"{library}.")]


def test_the_study_tracks_itself_through_its_logger_and_nothing_below_it_imports_tracking():
    below = ("sweep.inputs", "sweep.losses", "sweep.stats", "sweep.evaluation", "sweep.training")
    assert tracking_imports(below) == []
    assert tracking_imports(("sweep.study",)) == STUDY_TRACKING_IMPORTS
    lifecycle = MODULES["sweep.study.lifecycle"].read_text()
    assert "from sweep.tracking import MlflowStudyLogger" in lifecycle, "the face, not a module of tracking"


def test_the_study_training_evaluation_and_statistics_do_not_import_mlflow():
    found = [
        f"{module}:{line}"
        for module, path in MODULES.items()
        if unit_of(module) in NO_MLFLOW
        for line in runtime_library_imports(path.read_text(), "mlflow")
    ]
    assert found == [], found


def test_the_scan_sees_runtime_imports_and_skips_type_only_ones():
    source = (
        "import mlflow\nfrom mlflow.entities import Run\nimport mlflowish\n"
        "if TYPE_CHECKING:\n    from mlflow.tracking import MlflowClient\n"
        "def f():\n    import mlflow.sentence_transformers\n"
    )
    assert sorted(runtime_library_imports(source, "mlflow")) == [1, 2, 7]


def test_redrawing_a_results_folder_imports_neither_torch_nor_mlflow():
    """The notebooks redraw folders from their CSVs: before, `sweep.report`'s redraw imported sentence-transformers,
    torch and MLflow through the evaluation and losses faces (about 9 s of a notebook's 13); MLflow's client and the
    loss classes are imported where a live study or a trial needs them."""
    code = (
        "import sys\n"
        "from sweep.report import redraw_results_folder\n"
        "heavy = sorted({'torch', 'sentence_transformers', 'transformers', 'mlflow'} & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_no_module_finds_a_path_from_its_own_file():
    """Paths come from the config, the environment or the package's data (`importlib.resources`: the shipped
    `sweep/conf`), never from where a module's file lies: a wheel may live anywhere."""
    found = [module for module, path in MODULES.items() if "__file__" in path.read_text()]
    assert found == [], found
