"""Every Bicep file parses, the parser saw every declaration, and the files point at each other
correctly (modules, loaded files, azd's parameter file and azure.yaml)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.infra.bicep_model import INFRA, REPO, Template, bicep_files, declarations, parse
from tests.infra.bicep_symbols import FUNCTIONS, parse_tree, symbols, walk

EXPECTED_FILES = {
    "main.bicep",
    "modules/storage.bicep",
    "modules/monitoring.bicep",
    "modules/identity.bicep",
    "modules/functionapp.bicep",
    "modules/gpu-network.bicep",
    "modules/gpu-vmss.bicep",
    "modules/retention.bicep",
    "modules/storage-private-endpoints.bicep",
    "modules/alerts.bicep",
    "modules/eventgrid.bicep",
}


def test_the_deployment_has_all_its_files() -> None:
    assert {str(path.relative_to(INFRA)) for path in bicep_files()} == EXPECTED_FILES


@pytest.mark.parametrize("path", bicep_files(), ids=lambda p: str(p.relative_to(INFRA)))
def test_file_parses_and_no_declaration_is_lost(path: Path) -> None:
    tree = parse(path)  # a syntax error raises here
    # pycep silently keeps only one of several nested child resources; a regex count of the
    # top-level declarations catches any such loss.
    for section, names in declarations(path).items():
        assert set(tree.get(section, {})) == names, f"{path.name}: {section} differ"


@pytest.mark.parametrize("path", bicep_files(), ids=lambda p: str(p.relative_to(INFRA)))
def test_loaded_files_exist(path: Path) -> None:
    for loaded in re.findall(r"loadTextContent\('([^']+)'\)", path.read_text()):
        assert (path.parent / loaded).is_file(), f"{path.name} loads missing {loaded}"


def test_main_calls_every_module_with_only_parameters_it_declares() -> None:
    main = Template(INFRA / "main.bicep")
    for name, module in main.modules.items():
        target = (INFRA / module["detail"]["path"]).resolve()
        assert target.is_file(), f"module {name}: {target} missing"
        declared = parse(target)["parameters"]
        passed = set(Template.body(module)["params"])
        unknown = passed - set(declared)
        assert not unknown, f"module {name} gets unknown params {unknown}"
        required = {p for p, d in declared.items() if d.get("default") is None}
        assert required <= passed, f"module {name} misses required params {required - passed}"


def test_azd_parameter_file_names_real_parameters() -> None:
    main = Template(INFRA / "main.bicep")
    parameters = json.loads((INFRA / "main.parameters.json").read_text())["parameters"]
    assert set(parameters) <= set(main.parameters)
    required = {p for p, d in main.parameters.items() if d.get("default") is None}
    assert required <= set(parameters)
    assert parameters["environmentName"]["value"] == "${AZURE_ENV_NAME}"


def test_azure_yaml_deploys_the_function_app_from_the_repository_root() -> None:
    azure = yaml.safe_load((REPO / "azure.yaml").read_text())
    assert azure["infra"] == {"provider": "bicep", "path": "infra", "module": "main"}
    [(service, spec)] = azure["services"].items()
    assert spec == {"project": ".", "language": "python", "host": "function"}
    # azd finds the app by its azd-service-name tag.
    app = Template(INFRA / "modules/functionapp.bicep")
    assert app.default("azdServiceName") == service
    assert (REPO / spec["project"] / "function_app.py").is_file()


@pytest.mark.parametrize("path", bicep_files(), ids=lambda p: str(p.relative_to(INFRA)))
def test_file_parses_with_the_tree_sitter_grammar_too(path: Path) -> None:
    # A second, independent Bicep grammar: pycep's is older and lenient in places.
    errors = [
        f"line {node.start_point[0] + 1}: {node.type}"
        for node in walk(parse_tree(path))
        if node.type == "ERROR" or node.is_missing
    ]
    assert not errors, f"{path.name}: {errors}"


def test_tree_sitter_check_catches_a_syntax_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.bicep"
    bad.write_text("resource r 'Microsoft.Storage/storageAccounts@2023-05-01' = {\n")
    assert parse_tree(bad).has_error


@pytest.mark.parametrize("path", bicep_files(), ids=lambda p: str(p.relative_to(INFRA)))
def test_every_reference_resolves(path: Path) -> None:
    found = symbols(path)
    assert not found.undefined, f"{path.name}: undeclared {found.undefined}"
    unknown = found.calls - FUNCTIONS
    assert not unknown, f"{path.name}: not Bicep functions: {sorted(unknown)}"
    for module, output, line in found.module_outputs:
        module_path = (path.parent / found.modules[module]).resolve()
        assert output in parse(module_path).get("outputs", {}), (
            f"{path.name} line {line}: {module}.outputs.{output} is not an output of "
            f"{module_path.name}"
        )


def test_symbol_check_catches_typos(tmp_path: Path) -> None:
    (tmp_path / "m.bicep").write_text("output real string = 'x'\n")
    bad = tmp_path / "main.bicep"
    bad.write_text(
        "param prefix string = 'dagq'\n"
        "var names = [for q in queues: '${prefx}-q-${tolower(q)}']\n"
        "module m 'm.bicep' = {\n  name: 'm'\n}\n"
        "output o string = m.outputs.missing\n"
    )
    found = symbols(bad)
    assert [u.split()[0] for u in found.undefined] == ["queues", "prefx"]
    assert "tolower" in found.calls - FUNCTIONS
    assert found.module_outputs == [("m", "missing", 6)]
