"""Before/after table of issue 25's hostile-input cases: run tests/test_hostile_inputs.py per tree.

Usage: ``python bench/hostile_inputs.py [--before TREE]``

Runs the regression suite once with ``PYTHONPATH=<this checkout>`` ("after") and, with
``--before``, once more with ``PYTHONPATH=TREE`` (a folder holding another ``faircode/``, e.g.
``git archive 70e205b faircode | tar -x -C /tmp/base``), so the same tests judge both trees.  Each
row is one test: its case (issue 25's numbering, from the test's docstring), the outcome and
seconds per tree, and for a failure what happened (the test's assertion message — exit code and
what stderr said — or the exception a traceback ended in).  A second table runs each alias bomb
of the suite once per tree under the tests' own cap (``RLIMIT_AS`` 512 MB, killed at 20 s) and
shows how it ended, its wall time and the child's peak RSS (``wait4``; about 245 MB of it is
importing faircode's dependencies).  Nothing random.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "test_hostile_inputs.py"
_TMP = re.compile(r"/tmp/pytest-of-[^/]+/pytest-\d+/[^/]+/")
_EXCEPTION = re.compile(r"^(?:E\s+)?([A-Za-z_.]*(?:Error|Exception|Expired|Exit))\b:?(.*)$")


def docstrings(suite: Path = SUITE) -> dict[str, str]:
    """Test name -> first docstring line (``Case N: ...``) of every test in ``suite``."""
    tree = ast.parse(suite.read_text())
    return {node.name: (ast.get_docstring(node) or "").splitlines()[0]
            for node in tree.body if isinstance(node, ast.FunctionDef)
            and node.name.startswith("test_")}


def what_happened(message: str, text: str) -> str:
    """A short account of a failure: the test's own assertion message (the exit code and what
    stderr said), else the exception a traceback ended in."""
    message = _TMP.sub("", message)
    if message.startswith("AssertionError: ") and message.split("\n")[0][16:].strip():
        return " ".join(message.split("\n")[0][16:].split())[:110]
    if "TimeoutExpired" in message + text:
        return "timeout (> 20 s under the cap)"
    found = [m for line in (message + "\n" + text).splitlines()
             if (m := _EXCEPTION.match(line.strip()))]
    for match in reversed(found):
        name, rest = match.group(1), " ".join(match.group(2).split())
        if name != "AssertionError":
            return f"{name.rsplit('.', 1)[-1]}: {rest[:70]}".strip()
    return " ".join(message.split())[:110]


def run(tree: Path, suites: tuple[Path, ...] = (SUITE,), *,
        marks: str = "not slow") -> dict[str, tuple[str, float, str]]:
    """Run ``suites`` against ``tree``; test id -> (outcome, seconds, what happened)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        # -P: the working directory (this checkout) must not shadow PYTHONPATH's faircode
        subprocess.run([sys.executable, "-P", "-m", "pytest", *map(str, suites), "-q", "-p",
                        "no:cacheprovider", "-m", marks, f"--junitxml={report}"], cwd=ROOT,
                       env=env, capture_output=True, text=True, check=False)
        results: dict[str, tuple[str, float, str]] = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            outcome = "pass" if bad is None else "FAIL"
            detail = "" if bad is None else what_happened(bad.get("message", ""),
                                                           bad.text or "")
            results[case.get("name", "?")] = (outcome, float(case.get("time", 0)), detail)
        return results


def bomb(tree: Path, target: str) -> str:
    """Run one alias bomb of the suite against ``tree`` under its cap: end, wall time, peak RSS."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_hostile_inputs as suite

    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "stderr", "w+") as err:
        (Path(tmp) / "project").mkdir()
        project = suite.make_project(Path(tmp) / "project")
        args = suite.plant_bomb(project, target)
        env = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1"}
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, *args], cwd=project, env=env,
                                 preexec_fn=suite._cap, stdout=subprocess.DEVNULL, stderr=err)
        timer = threading.Timer(suite.CAP_SECONDS, child.kill)
        timer.start()
        _, status, usage = os.wait4(child.pid, 0)  # the child's own peak RSS
        timer.cancel()
        seconds = time.perf_counter() - started
        child.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        last = next((x for x in reversed(err.read().splitlines()) if x.strip()), "")
        ended = "killed at the 20 s cap" if code < 0 else f"exit {code}"
        return (f"{ended}, {seconds:.1f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB: "
                f"{' '.join(last.split())[:70]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a tree holding the old faircode/")
    args = parser.parse_args(argv)
    after = run(ROOT)
    before = run(args.before) if args.before else {}
    notes = docstrings()
    print("| case | test | before | after |")
    print("|---|---|---|---|")
    for name, (outcome, seconds, detail) in after.items():
        doc = notes.get(name.split("[")[0], "")
        case = doc.split(":")[0].removeprefix("Case ") if doc.startswith("Case") else "?"
        old = before.get(name)
        shown_before = "-" if old is None else f"{old[0]} {old[1]:.1f}s {old[2]}".strip()
        print(f"| {case} | {name} | {shown_before} | {outcome} {seconds:.1f}s {detail} |".replace(
            "  ", " "))
    print("\n| alias bomb in | before | after |")
    print("|---|---|---|")
    for target in ("params.yaml", "audit.yaml", "axes.yaml"):
        shown_before = bomb(args.before, target) if args.before else "-"
        print(f"| {target} | {shown_before} | {bomb(ROOT, target)} |")
    passed = sum(o == "pass" for o, _, _ in after.values())
    print(f"\nafter: {passed} of {len(after)} pass"
          + (f"; before: {sum(o == 'pass' for o, _, _ in before.values())} of {len(before)}"
             if before else ""))
    return 0 if passed == len(after) else 1


if __name__ == "__main__":
    sys.exit(main())
