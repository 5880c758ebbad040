"""The report page's provenance section: the states behind the results, how they were run, by what.

:func:`provenance_html` prints, from the audits' ``run.json`` records: each state (commit, code and
params digests, whether its inputs were committed), whether a state's parameters are those of the
project's params file, the report code that rendered the page, per audit the dataset and manifest
digests, seeds and rows, the parameters and the package versions.

Design decisions
----------------
* **Clean inputs are not the committed parameters.**  A run from committed code and data with
  ``--n-resamples 200`` on the command line is "clean", yet its numbers are not the params file's:
  where a state's ``params_sha256`` differs from the params file's (the report's caller passes
  :func:`faircode.provenance.state.params_file_record`), the state says so and lists the
  parameters that differ with both values.  Without a params file the page says it cannot tell.
* **Nothing runs off the page sideways**: the package versions are one wrapped line of
  ``name version`` pairs, the parameters a wrapped block.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from faircode.provenance.state import NOT_PARAMS, StateIdentity, group_states
from faircode.report.html_tables import frame_html

__all__ = ["CSS", "params_differences", "provenance_html"]

CSS = ".wrap{white-space:pre-wrap;overflow-wrap:anywhere}.versions{font-size:.8rem}"
"""The section's own styles (the page adds them to its sheet)."""


def _esc(value: object) -> str:
    return html.escape(str(value))


def params_differences(run: Mapping[str, Any], committed: Mapping[str, Any]) -> list[str]:
    """``n_resamples 200 (params.yaml: 2000)`` for each parameter a run's recorded ``config``
    has with another value than the params file's (``committed``: ``{"path", "config"}``)."""
    mine, theirs = run.get("config") or {}, committed.get("config") or {}
    keys = [k for k in dict.fromkeys((*mine, *theirs)) if k not in NOT_PARAMS]
    return [f"{key} {json.dumps(mine.get(key))} ({committed.get('path', 'params file')}: "
            f"{json.dumps(theirs.get(key))})" for key in keys if mine.get(key) != theirs.get(key)]


def _params_line(state: StateIdentity, runs: Sequence[Mapping[str, Any]],
                 committed: Mapping[str, Any] | None) -> tuple[str, bool]:
    """The ``params`` entry of a state, and whether it differs from the params file."""
    if committed is None:
        return "unknown (no params file given to the report to compare with)", False
    if state.params_sha256 is None or state.params_sha256 == committed.get("sha256"):
        same = state.params_sha256 is not None
        return (f"those of {_esc(committed.get('path'))}" if same else "unknown"), False
    differences = params_differences(runs[0], committed) if runs else []
    listed = "; ".join(differences) or "the digests differ"
    return (f"<b>not those of {_esc(committed.get('path'))}</b>: {_esc(listed)}"), True


def _state_html(state: StateIdentity | None, audits: Sequence[str], *, alone: bool,
                runs: Sequence[Mapping[str, Any]], committed: Mapping[str, Any] | None) -> str:
    """One state as a definition list whose ``data-*`` attributes carry the identity."""
    who = "" if alone else f"<p>Audits {_esc(', '.join(audits))}:</p>"
    if state is None:
        return (f"{who}<p class=\"state\" data-state=\"unknown\">State unknown: their run.json "
                "records no <code>state</code> (written before states were recorded); re-run "
                "them to record it.</p>")
    params, differs = _params_line(state, runs, committed)
    dirty = {True: "<b>DIRTY</b>: produced from uncommitted inputs ("
                   + _esc(", ".join(state.dirty_inputs) or "changes") + "); not citable, "
                   "<code>faircode freeze</code> refuses it",
             False: "clean (every input as committed)" + (
                 ", but run with other parameters than the params file's (below)"
                 if differs else ""),
             None: "unknown (not in a git repository)"}[state.inputs_dirty]
    attrs = (f'data-commit="{_esc(state.git_commit or "")}" data-code="{_esc(state.code_sha256)}" '
             f'data-params="{_esc(state.params_sha256 or "")}" '
             f'data-dirty="{_esc(str(state.inputs_dirty).lower())}"')
    return (f'{who}<dl class="state" {attrs}>'
            f"<dt>git commit</dt><dd><code>{_esc(state.git_commit or 'unknown')}</code></dd>"
            f"<dt>code sha256</dt><dd><code>{_esc(state.code_sha256)}</code></dd>"
            f"<dt>params sha256</dt><dd><code>{_esc(state.params_sha256 or 'unknown')}</code>"
            f'</dd><dt>params</dt><dd class="params" data-differ="{str(differs).lower()}">'
            f"{params}</dd><dt>inputs</dt><dd>{dirty}</dd></dl>")


def provenance_html(runs: Mapping[str, Mapping[str, Any]], record: Mapping[str, Any]) -> str:
    """The provenance section of the audits' ``runs`` (audit -> run.json); ``record`` is the
    report code's own (its ``state``) with, where given, ``params_file``: the project's params
    (:func:`faircode.provenance.state.params_file_record`)."""
    groups = group_states(runs)
    committed = record.get("params_file")
    committed = committed if isinstance(committed, Mapping) else None
    lead = ("<p>These results come from one state (the same identity is in every "
            "<code>run.json</code> as <code>state</code> and on the MLflow parent run as "
            "<code>state.*</code> tags):</p>" if len(groups) == 1 else
            f"<p><b>These results come from {len(groups)} states</b> (audits re-run after a "
            "change): each audit's numbers are those of its own state below.</p>")
    parts = [lead, *(_state_html(state, audits, alone=len(groups) == 1,
                                 runs=[runs[a] for a in audits], committed=committed)
                     for state, audits in groups.items()),
             "<p>To cite these numbers, cite the freeze record <code>freezes/&lt;name&gt;.json"
             "</code> that <code>faircode freeze &lt;name&gt;</code> makes once they are "
             "committed: it adds the commit that contains them and its <code>dvc.lock</code>, "
             "and <code>faircode verify &lt;name&gt;</code> re-derives every number.</p>"]
    rendered = record.get("state")
    if isinstance(rendered, Mapping) and "code_sha256" in rendered:
        page = StateIdentity.from_dict(rendered)
        inputs = {True: "from DIRTY inputs", False: "from clean inputs", None: ""}
        parts.append(f"<p>This page was rendered by the report code at commit "
                     f"<code>{_esc(page.git_commit or 'unknown')}</code> "
                     f"{inputs[page.inputs_dirty]} (report code sha256 "
                     f"<code>{_esc(page.code_sha256)}</code>).</p>")
    rows = [{"audit": audit,
             "dataset sha256": run.get("dataset", {}).get("sha256", "unknown"),
             "manifest sha256": run.get("manifest_sha256", "unknown"),
             "master seed": run.get("seeds", {}).get("master", "unknown"),
             "train / test rows": f"{run.get('rows', {}).get('train', '?')} / "
                                  f"{run.get('rows', {}).get('test', '?')}"}
            for audit, run in runs.items()]
    if rows:
        parts.append(frame_html(pd.DataFrame(rows), key=None,
                                hashes=("dataset sha256", "manifest sha256")))
    configs = {json.dumps(r.get("config", {}), sort_keys=True) for r in runs.values()}
    for text in sorted(configs):
        who = [a for a, r in runs.items()
               if json.dumps(r.get("config", {}), sort_keys=True) == text]
        shown = ", ".join(f"{k} {json.dumps(v)}" for k, v in json.loads(text).items())
        parts.append(f"<p>Parameters of {_esc(', '.join(who))}:</p>"
                     f'<p class="wrap"><code>{_esc(shown)}</code></p>')
    versions = {json.dumps(r.get("versions", {}), sort_keys=True) for r in runs.values()}
    for text in sorted(versions):
        pairs = " · ".join(f"{k} {v}" for k, v in json.loads(text).items())
        parts.append(f'<p class="versions wrap">Package versions of the runs: {_esc(pairs)}</p>')
    return "".join(parts)
