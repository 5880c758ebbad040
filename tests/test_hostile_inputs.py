"""Regression suite of issue 25 (input half): every hostile input is one line, exit 2, no traceback.

Each test builds its input in ``tmp_path`` (a tiny project: ``pyproject.toml``, ``params.yaml``,
``audits/toy/audit.yaml`` over ``data/raw/toy/toy.csv``) and runs it through the real entry
point: the CLI (``faircode.pipeline.cli.main``) or a DVC stage's ``main`` in-process, or a
subprocess under a memory and time cap (``RLIMIT_AS`` 512 MB, 20 s) where the input is a bomb.
The ``case`` in each docstring is the number of the cause in issue 25's list;
``bench/hostile_inputs.py`` runs this file against any tree and prints the before/after table.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from faircode.pipeline.cli import main

RAW = Path("data", "raw", "toy", "toy.csv")
"""Where the toy audit's raw file is, below the project (``data/raw/<audit>/``)."""
CAP_BYTES = 512 * 2**20
CAP_SECONDS = 20.0
HEADER = "id,name,group,age,score,x,outcome"
MANIFEST = """\
name: toy
dataset:
  path: ../../data/raw/toy/toy.csv
test_size: 0.25
target: {column: outcome, method: equals, value: hi}
protected_attributes:
  - {name: grp, type: categorical, column: group, disadvantaged_values: [a],
     advantaged_values: [b]}
  - {name: young, type: numeric_threshold, column: age, threshold: 30, disadvantaged: below}
core_features: [score]
proxy_features: [x]
"""
PARAMS = "audits: [toy]\nstats:\n  n_resamples: 10\n  n_permutations: 10\n"
AXES = "- name: gender\n  substitutions:\n    - {pattern: she, replacement: he}\n"


def data_rows(n: int = 40) -> list[str]:
    """``n`` CSV rows where both groups hold both labels and both age sides."""
    return [
        f"{i + 1},P{i + 1},{'ab'[i % 2]},{20 + i},{(i * 7) % 10 / 2},{'uvw'[i % 3]},"
        f"{'hi' if (i // 2) % 2 == 0 else 'lo'}"
        for i in range(n)
    ]


def csv_text(rows: list[str]) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


def make_project(root: Path) -> Path:
    """Write a minimal faircode project into ``root``: audit ``toy``, its data, params, axes."""
    (root / "pyproject.toml").write_text("")
    (root / "audits" / "toy").mkdir(parents=True)
    (root / "audits" / "toy" / "audit.yaml").write_text(MANIFEST)
    (root / RAW).parent.mkdir(parents=True)
    (root / RAW).write_text(csv_text(data_rows()))
    (root / "params.yaml").write_text(PARAMS)
    (root / "axes.yaml").write_text(AXES)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A minimal faircode project: one valid audit ``toy``, its data and a valid params.yaml."""
    return make_project(tmp_path)


BOMBS: dict[str, tuple[str, str, list[str]]] = {
    "params.yaml": ("params.yaml", "audits: [toy]\nstats:\n  n_resamples: {bomb}\n",
                    ["-m", "faircode.pipeline.stages.check_params", "data/params.ok"]),
    "audit.yaml": ("audits/toy/audit.yaml", MANIFEST.replace("test_size: 0.25",
                                                             "test_size: {bomb}"),
                   ["-m", "faircode.pipeline.cli", "validate", "--audits", "audits", "toy"]),
    "axes.yaml": ("axes.yaml", "- name: {bomb}\n  substitutions: []\n",
                  ["-m", "faircode.pipeline.cli", "perturb", "--axes", "axes.yaml", "in.jsonl"]),
}
"""Where each alias bomb goes (file, its text with ``{bomb}``) and the command that reads it."""


def plant_bomb(project: Path, target: str) -> list[str]:
    """Write the alias bomb of ``BOMBS[target]`` into ``project``; return the command's args."""
    file, text, args = BOMBS[target]
    (project / file).write_text(text.replace("{bomb}", alias_bomb()))
    jsonl(project, '{"text": "she"}')
    return args


def one_line(err: str, code: int, *, exit_code: int = 2) -> str:
    """The single stderr line, asserting it is alone, without a traceback, and the exit code.

    Each failure says what happened instead (for the before/after table of the bench script).
    """
    lines = [line for line in err.splitlines() if line.strip()]
    shown = repr(lines[-1][:100]) if lines else "nothing"
    assert "Traceback" not in err, f"exit {code}, a traceback ending in {shown}"
    assert len(lines) == 1, f"exit {code}, {len(lines)} lines on stderr, the last {shown}"
    assert code == exit_code, f"exit {code}: {shown}"
    return lines[0]


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``faircode argv`` in-process; return (exit code, stdout, stderr)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse exits itself
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def stage(entry: Callable[[list[str]], object], argv: list[str], root: Path,
          monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run a DVC stage's ``main(argv)`` in ``root``; return (exit code, stderr)."""
    monkeypatch.chdir(root)
    try:
        result = entry(argv)
        code = result if isinstance(result, int) else 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().err


def check_params(root: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the ``check-params`` stage in ``root``."""
    from faircode.pipeline.stages import check_params as stage_module

    return stage(stage_module.main, ["data/params.ok"], root, monkeypatch, capsys)


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


def run_capped(args: list[str], *, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python args`` in ``cwd`` under the 512 MB address-space cap and the 20 s timeout."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, preexec_fn=_cap,
                          capture_output=True, text=True, timeout=CAP_SECONDS, check=False)


def alias_bomb(levels: int = 9, width: int = 10) -> str:
    """A flow list of ~600 bytes whose nested aliases expand to ``width ** levels`` leaves."""
    parts = ["&l0 [" + ", ".join(["x"] * width) + "]"]
    parts += [f"&l{k} [" + ", ".join([f"*l{k - 1}"] * width) + "]" for k in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def deep_yaml(depth: int = 5000) -> str:
    return "[" * depth + "]" * depth


def jsonl(project: Path, *lines: str) -> Path:
    path = project / "in.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def perturb(project: Path, capsys: pytest.CaptureFixture[str], *,
            axes: str = "axes.yaml") -> tuple[int, str, str]:
    return cli(["perturb", "--axes", str(project / axes), str(project / "in.jsonl")], capsys)


def validate(project: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return cli(["validate", "--audits", str(project / "audits"), "toy"], capsys)


def write_rows(project: Path, rows: list[str]) -> None:
    (project / RAW).write_text(csv_text(rows))


# --------------------------------------------------------------------------- 1: alias bombs


def test_alias_bomb_in_params_stops_check_params_under_the_cap(project: Path) -> None:
    """Case 1: a 10**9-leaf alias bomb in params.yaml is one line naming its line, in seconds."""
    done = run_capped(plant_bomb(project, "params.yaml"), cwd=project)
    line = one_line(done.stderr, done.returncode)
    assert line.startswith("params.yaml: line 3: ") and "alias" in line, line


def test_alias_bomb_in_a_manifest_stops_validate_under_the_cap(project: Path) -> None:
    """Case 1: the same bomb in audit.yaml makes ``faircode validate`` exit 2 with one line."""
    done = run_capped(plant_bomb(project, "audit.yaml"), cwd=project)
    line = one_line(done.stderr, done.returncode)
    assert line.startswith(f"{Path('audits/toy/audit.yaml')}: line 4: ") and "alias" in line, line


def test_alias_bomb_in_an_axes_file_stops_perturb_under_the_cap(project: Path) -> None:
    """Case 1: the bomb as an axis name makes ``faircode perturb`` exit 2, not a MemoryError."""
    done = run_capped(plant_bomb(project, "axes.yaml"), cwd=project)
    line = one_line(done.stderr, done.returncode)
    assert line.startswith("axes.yaml: line 1: ") and "alias" in line, line


def test_describe_of_a_huge_shared_structure_is_bounded(project: Path) -> None:
    """Case 1: an error message about a 10**9-leaf value is built without materialising it."""
    code = ("from faircode.core.errors import describe\n"
            "value = ['x'] * 10\n"
            "for _ in range(8):\n"
            "    value = [value] * 10\n"
            "print(describe(value))\n")
    done = run_capped(["-c", code], cwd=project)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr.splitlines()[-1:]}"
    inner = [["x"] * 10] * 10
    expected = ("[" * 7 + repr(inner))[:77] + "... (list)\n"  # repr(value)'s first 77 characters
    assert done.stdout == expected


# --------------------------------------------------------------------------- 4: non-finite


@pytest.mark.parametrize(("section", "key", "value"), [
    ("stats", "confidence", ".nan"),
    ("models", "decision_threshold", ".nan"),
    ("mitigation", "eps", ".inf"),
])
def test_non_finite_params_are_refused_by_check_params(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    section: str, key: str, value: str,
) -> None:
    """Case 4: NaN or infinity in a float param is one line naming its key path."""
    (project / "params.yaml").write_text(f"audits: [toy]\n{section}:\n  {key}: {value}\n")
    code, err = check_params(project, monkeypatch, capsys)
    line = one_line(err, code)
    assert line.startswith(f"params.yaml: {section}.{key}: expected a finite number"), line


# --------------------------------------------------------------------------- 6: nesting, bytes


def test_deep_nesting_in_params_is_one_line(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: 5,000 nested lists in params.yaml are refused by depth, not a RecursionError."""
    (project / "params.yaml").write_text(f"audits: [toy]\nstats: {deep_yaml()}\n")
    code, err = check_params(project, monkeypatch, capsys)
    line = one_line(err, code)
    assert line.startswith("params.yaml: line 2: expected at most"), line


def test_deep_nesting_in_a_manifest_is_one_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: 5,000 nested lists in audit.yaml make validate exit 2 with one line."""
    manifest = project / "audits" / "toy" / "audit.yaml"
    manifest.write_text(MANIFEST + f"title: {deep_yaml()}\n")
    code, _, err = validate(project, capsys)
    line = one_line(err, code)
    assert line.startswith(f"{manifest}: line 12: expected at most"), line


def test_deep_nesting_in_an_axes_file_is_one_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: 5,000 nested lists in the axes file make perturb exit 2 with one line."""
    (project / "axes.yaml").write_text(f"- {deep_yaml()}\n")
    jsonl(project, '{"text": "she"}')
    code, _, err = perturb(project, capsys)
    line = one_line(err, code)
    assert line.startswith(f"{project / 'axes.yaml'}: line 1: expected at most"), line


def test_non_utf8_params_name_the_line_and_byte(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: a Latin-1 byte in params.yaml is one line naming its line and byte offset."""
    (project / "params.yaml").write_bytes(b"audits: [toy]\nstats:\n  n_resamples: 10 # caf\xe9\n")
    code, err = check_params(project, monkeypatch, capsys)
    line = one_line(err, code)
    assert line == "params.yaml: line 3: expected UTF-8 text, got byte 0xe9 at byte offset 44", \
        line


def test_non_utf8_axes_file_names_the_line_and_byte(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: a Latin-1 byte in the axes file is one line naming its line and byte offset."""
    (project / "axes.yaml").write_bytes(AXES.replace("she", "sh\xe9").encode("latin-1"))
    jsonl(project, '{"text": "she"}')
    code, _, err = perturb(project, capsys)
    line = one_line(err, code)
    assert line == (f"{project / 'axes.yaml'}: line 3: expected UTF-8 text, got byte 0xe9 at "
                    "byte offset 50"), line


def test_a_5000_digit_integer_in_jsonl_names_its_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: an integer beyond Python's digit limit is one line naming the JSONL line."""
    jsonl(project, '{"text": "she"}', '{"text": "she", "n": ' + "7" * 5000 + "}")
    code, out, err = perturb(project, capsys)
    line = one_line(err, code)
    assert out == ""
    assert line.startswith(
        f"{project / 'in.jsonl'}:2: expected an integer of at most 4300 digits"), line


def test_deep_nesting_in_jsonl_names_its_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: 100,000 nested arrays in a JSONL line are refused by depth, not a RecursionError."""
    jsonl(project, '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = perturb(project, capsys)
    line = one_line(err, code)
    assert line == (f"{project / 'in.jsonl'}:1: expected at most 1000 levels of nesting, "
                    "got 100001"), line


def test_a_valid_line_600_arrays_deep_is_perturbed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: a valid 600-deep payload is rewritten (no recursion limit) and written back."""
    jsonl(project, '{"text": ' + "[" * 600 + '"she said"' + "]" * 600 + "}")
    code, out, err = perturb(project, capsys)
    assert code == 0, err[-2000:]
    assert out.count("\n") == 1
    assert ("[" * 600 + '"he said"' + "]" * 600) in out


# --------------------------------------------------------------------------- 7: fetch


def test_corrupt_copy_with_unreachable_url_fails_the_fetch_stage(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 7: a corrupted raw file whose URL is down is a checksum error, never "unavailable"."""
    from faircode.pipeline.stages import fetch as fetch_stage

    raw = project / RAW
    good = hashlib.sha256(raw.read_bytes()).hexdigest()
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    manifest = MANIFEST.replace(
        "  path: ../../data/raw/toy/toy.csv",
        f"  path: ../../data/raw/toy/toy.csv\n  sha256: {good}\n"
        f"  source: {{url: 'http://127.0.0.1:{port}/toy.csv'}}")
    (project / "audits" / "toy" / "audit.yaml").write_text(manifest)
    raw.write_text(csv_text(data_rows()).replace("P1,", "P9,"))
    bad = hashlib.sha256(raw.read_bytes()).hexdigest()
    (project / "empty-mirror").mkdir()
    monkeypatch.setenv("FAIRCODE_DATA_MIRROR", str(project / "empty-mirror"))
    code, err = stage(fetch_stage.main, ["toy"], project, monkeypatch, capsys)
    line = one_line(err, code)
    assert "toy.csv" in line and good in line and bad in line and "unavailable" not in line, line
    assert not (project / RAW.parent / "unavailable.json").exists()


# --------------------------------------------------------------------------- 8: malformed data


def test_a_row_with_an_extra_field_is_an_error_naming_its_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 8: a ragged row is refused (it would shift values into the wrong columns)."""
    rows = data_rows()
    rows[4] = "5,P5,a,24,2.0,extra,u,hi"
    write_rows(project, rows)
    code, _, err = validate(project, capsys)
    line = one_line(err, code)
    assert line == f"{project / RAW}: line 6: expected 7 fields as in the " \
                   "header, got 8", line


def test_text_in_a_declared_numeric_column_is_an_error_naming_row_and_value(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 8: a text value in a numeric_threshold column is refused, naming line and value."""
    rows = data_rows()
    rows[2] = rows[2].replace(",22,", ",abc,")
    write_rows(project, rows)
    code, _, err = validate(project, capsys)
    line = one_line(err, code)
    assert line == (f"{project / RAW}: line 4: column 'age' "
                    "(protected_attributes[1].column): expected a number, got 'abc' (str)"), line


def test_text_in_a_numeric_feature_is_a_validate_warning(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 8: one text value turning a numeric feature into categories is a clear warning."""
    rows = data_rows()
    rows[7] = rows[7].replace(",4.5,", ",n/a yet,")
    write_rows(project, rows)
    code, out, err = validate(project, capsys)
    line = one_line(err, code, exit_code=0)
    assert "toy: " in out
    assert line.startswith(f"warning: {project / RAW}: line 9: column 'score' "
                           "(core_features[0]): "), line
    assert "'n/a yet' (str)" in line and "categories" in line, line


def test_infinity_in_a_feature_is_an_error_naming_the_column(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 8: an ``inf`` in a numeric feature is refused at validate, naming column and line."""
    rows = data_rows()
    rows[6] = rows[6].replace(",1.0,", ",inf,")
    write_rows(project, rows)
    code, _, err = validate(project, capsys)
    line = one_line(err, code)
    assert line == (f"{project / RAW}: line 8: column 'score' "
                    "(core_features[0]): expected a finite number, got inf (float)"), line


# --------------------------------------------------------------------------- 9: check-params


@pytest.mark.parametrize(("params", "start"), [
    ("audits: [toy, compass]\n",
     "params.yaml: audits[1]: expected an audit folder of audits (toy), got 'compass' (str)"),
    ("audits: [toy]\nreport: {model: random_forrest}\n", "params.yaml: report.model: expected "),
    ("audits: [toy]\nreport: {metric: demografic_parity}\n",
     "params.yaml: report.metric: expected "),
    ("audits: []\n", "params.yaml: audits: expected a non-empty list of audit names"),
    ("", "params.yaml: top level: expected a mapping of sections"),
    ("stats: {n_resamples: 10}\n", "params.yaml: audits: expected a non-empty list"),
])
def test_check_params_validates_what_the_pipeline_uses(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    params: str, start: str,
) -> None:
    """Case 9: audit names, report keys, empty lists and documents fail check-params."""
    (project / "params.yaml").write_text(params)
    code, err = check_params(project, monkeypatch, capsys)
    line = one_line(err, code)
    assert line.startswith(start), line


# --------------------------------------------------------------------------- 10: smaller


def test_unicode_line_separator_inside_a_json_string_is_valid_jsonl(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 10: U+2028 inside a string does not split the line (nor shift later line numbers)."""
    jsonl(project, '{"text": "she\u2028said"}', '{"text": "she"}')
    code, out, err = perturb(project, capsys)
    assert code == 0, err
    records = [json.loads(line) for line in out.split("\n") if line]  # not splitlines()
    assert [r["id"] for r in records] == [1, 2]
    assert records[0]["perturbed"] == {"text": "he\u2028said"}


def test_nan_in_a_payload_is_refused_not_written_back_bare(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 10: ``NaN`` (not JSON) in a payload is one line naming the line, no output."""
    jsonl(project, '{"text": "she"}', '{"text": "she", "score": NaN}')
    code, out, err = perturb(project, capsys)
    line = one_line(err, code)
    assert out == ""
    assert line.startswith(f"{project / 'in.jsonl'}:2: expected a JSON number, got NaN"), \
        line


def test_header_only_data_file_names_the_file_not_the_filters(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 10: a file with a header and no row says so, instead of blaming row filters."""
    write_rows(project, [])
    code, _, err = validate(project, capsys)
    line = one_line(err, code)
    assert "row_filters" not in line, line
    assert line == (f"{project / RAW}: line 2: expected data rows below the "
                    "header, got none"), line


def test_merge_key_override_in_a_manifest_is_accepted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 10: ``<<: *anchor`` then an overriding key is YAML 1.1's merge, not a duplicate."""
    manifest = MANIFEST.replace(
        "  - {name: grp, type: categorical",
        "  - &grp {name: grp, type: categorical",
    ).replace("core_features", "  - {<<: *grp, name: grp_again}\ncore_features")
    (project / "audits" / "toy" / "audit.yaml").write_text(manifest)
    code, out, err = validate(project, capsys)
    assert code == 0, err
    assert "grp_again" in out


def test_merge_key_override_in_params_is_accepted(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 10: a merged mapping's key overridden in params.yaml keeps the override."""
    from faircode.core.config import load_params

    (project / "params.yaml").write_text(
        "audits: [toy]\nstats:\n  <<: {n_resamples: 10, n_permutations: 10}\n  n_resamples: 20\n")
    code, err = check_params(project, monkeypatch, capsys)
    assert code == 0, err
    assert load_params(project / "params.yaml").config.stats.n_resamples == 20


def test_a_real_duplicate_beside_a_merge_is_still_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 10: a key written twice in one mapping stays an error when the mapping merges."""
    (project / "params.yaml").write_text(
        "audits: [toy]\nstats:\n  <<: {n_permutations: 10}\n  n_resamples: 20\n"
        "  n_resamples: 30\n")
    code, err = check_params(project, monkeypatch, capsys)
    line = one_line(err, code)
    assert line == ("params.yaml: line 5: expected each key once in a mapping, got "
                    "'n_resamples' again (first at line 4)"), line


def test_a_bad_flag_type_is_one_line_without_the_usage(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 10: ``--n-resamples ten`` is one line naming the flag, exit 2, no usage text."""
    code, _, err = cli(["run", "--n-resamples", "ten", "toy"], capsys)
    line = one_line(err, code)
    assert line == "faircode run: --n-resamples: expected an integer, got 'ten' (str)", line
