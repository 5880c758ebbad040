"""docs/perturbation-axes.md is where every "no axes" error points, and what it and
`faircode perturb --help` show is real: each YAML axes block loads, the Python example gives the
output it states."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from faircode.core.errors import ConfigError, PerturbationError
from faircode.counterfactual.axes import load_axes
from faircode.counterfactual.perturb import AXES_GUIDE, perturb
from faircode.pipeline.cli import PERTURB_DESCRIPTION

REPO = Path(__file__).resolve().parent.parent
GUIDE = (REPO / AXES_GUIDE).read_text()


def test_no_axes_errors_name_the_guide(tmp_path: Path) -> None:
    """perturb() without axes and an axes file without one both name the guide, which exists."""
    with pytest.raises(PerturbationError, match=re.escape(AXES_GUIDE)):
        perturb("text", [])
    (tmp_path / "axes.yaml").write_text("axes: []\n")
    with pytest.raises(ConfigError, match=re.escape(AXES_GUIDE)):
        load_axes(tmp_path / "axes.yaml")


@pytest.mark.parametrize("block", [
    *re.findall(r"```yaml\n(.*?)```", GUIDE, re.S),
    PERTURB_DESCRIPTION.split("the axes file", 1)[1].split(":\n", 1)[1],
], ids=lambda b: b.split("name: ", 1)[1].split()[0])
def test_every_axes_example_loads(tmp_path: Path, block: str) -> None:
    """Each axes example of the guide and of `faircode perturb --help` is a valid axes file."""
    text = textwrap.dedent(block)
    path = tmp_path / "axes.yaml"
    path.write_text(text)
    assert yaml.safe_load(text)
    assert load_axes(path)


def test_the_guides_python_example_gives_its_stated_output() -> None:
    """The guide's Python block runs and its commented result is what perturb() returns."""
    code = re.search(r"```python\n(.*?)```", GUIDE, re.S)
    assert code
    scope: dict[str, object] = {}
    exec(code.group(1), scope)  # the repository's own documentation
    stated = re.search(r"# copies\[0\]\.perturbed == (\{.*\})", code.group(1))
    assert stated
    assert scope["copies"][0].perturbed == ast.literal_eval(stated.group(1))  # type: ignore[index]
