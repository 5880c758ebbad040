"""Check: what a researcher sees of a synced state in the real MLflow UI (screenshots + DOM).

Syncs ``--results`` into a fresh SQLite store (as ``faircode track`` does), starts ``mlflow
server`` and headless Chromium on 127.0.0.1 (free ports, a fresh browser profile), drives the
browser over the DevTools protocol (``aiohttp``'s websocket client, already a dependency) and
writes three screenshots into ``--out``:

* ``experiment.png`` -- the experiment's own address, as the experiments list links it;
* ``first.png`` -- the address ``faircode track`` prints and the README gives
  (:func:`faircode.record.tracking.runs_url`: the shared first-screen view of
  :mod:`faircode.record.first_screen`), as it opens, nothing clicked;
* ``runs.png`` -- the runs table of one audit's fairness children sorted by name, with a few
  metric and param columns shown (the column selector, clicked like a user), and
  ``runs-right.png`` -- the same table scrolled to its right end;
* ``compare.png`` -- MLflow's compare view of S0 and S3 of one cell (LR, first attribute).

It prints what the DOM shows (the view an experiment opens on, the child names, the column
headers, the params that differ between S0 and S3) and exits 1 when the names or the compare
view are not what :mod:`faircode.record.names` promises.  The selectors are MLflow 3.17's.

Usage: ``PYTHONPATH=. python bench/mlflow_ui.py --results /tmp/ui-results --out /tmp/ui``
(``/tmp/ui-results``: e.g. ``faircode run compas german_credit_lending --n-resamples 100
--n-permutations 100 --out /tmp/ui-results`` then ``faircode report --results /tmp/ui-results``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faircode.record.tracking import runs_url, sync_results

CHROMIUM = "/usr/bin/chromium"
METRICS = ("dp", "dp.lo", "dp.hi", "dp.q_audit", "eopp", "acc")
PARAMS = ("strategy", "model", "attribute")
_PICK = """(() => {
  const want = %s; let group = null; const done = [];
  for (const n of document.querySelectorAll('.du-bois-light-tree-treenode')) {
    const t = n.innerText.trim(), g = t.match(/^(Attributes|Metrics|Parameters|Tags)/);
    if (g) { group = g[1]; continue; }
    if ((want[group] || []).includes(t)) {
      (n.querySelector('.du-bois-light-tree-checkbox') || n).click(); done.push(t);
    }
  }
  return done.length;
})()"""


@dataclass(frozen=True, slots=True)
class Findings:
    """What the DOM showed in each view."""

    experiment_view: str
    child_names: tuple[str, ...]
    headers: tuple[str, ...]
    differing_params: tuple[str, ...]
    first_names: tuple[str, ...] = ()
    first_headers: tuple[str, ...] = ()
    first_count: str = ""
    first_cut: tuple[str, ...] = ()
    """Names on the first screen whose cell cuts them (text wider than the cell)."""


_FIRST = """(() => {
  const names = [], cut = [];
  for (const a of document.querySelectorAll('a')) {
    const t = a.innerText.trim();
    if (!/ S[0-9] /.test(t)) continue;
    names.push(t);
    const cell = a.closest('[role=gridcell]') || a.parentElement;
    if (a.scrollWidth > cell.clientWidth + 1 || a.scrollWidth > a.clientWidth + 1) cut.push(t);
  }
  const headers = [...new Set(Array.from(document.querySelectorAll('[role=columnheader]'))
    .map(h => h.innerText.trim()).filter(x => x))];
  const count = (document.body.innerText.match(/[0-9,]+ matching runs?/) || [''])[0];
  return {names, cut, headers, count};
})()"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(url: str, *, seconds: float, process: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer") from None
            time.sleep(0.3)


class Page:
    """One browser tab over the DevTools protocol."""

    def __init__(self, ws: Any) -> None:
        self.ws, self.calls = ws, 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result."""
        self.calls += 1
        me = self.calls
        await self.ws.send_json({"id": me, "method": method, "params": params})
        while True:
            message = await self.ws.receive_json()
            if message.get("id") == me:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))

    async def js(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page; its JSON value."""
        done = await self.call("Runtime.evaluate", expression=expression, awaitPromise=True,
                               returnByValue=True)
        return done.get("result", {}).get("value")

    async def until(self, expression: str, *, seconds: float = 30) -> Any:
        """Poll ``expression`` until it is truthy (the UI renders asynchronously)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = await self.js(expression)
            if value:
                return value
            await asyncio.sleep(0.5)
        raise RuntimeError(f"timed out waiting for {expression[:80]}")

    async def open(self, url: str, ready: str) -> None:
        """Navigate, wait for ``ready``, close MLflow's assistant pane if it is open."""
        await self.call("Page.navigate", url=url)
        await self.until(ready)
        await self.js("document.querySelector('[data-component-id=\"mlflow.assistant."
                      "chat_panel.close\"]')?.click()")
        await asyncio.sleep(1.5)

    async def shot(self, path: Path) -> None:
        """Save a PNG of the viewport."""
        data = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(data["data"]))


def _cell_runs(uri: str, experiment_id: str, audit: str) -> tuple[str, list[str]]:
    """(the first attribute, the run ids of S0 and S3 of logistic regression for it)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([experiment_id], f"tags.audit = '{audit}' and tags.table = "
                              "'fairness' and tags.model = 'logistic_regression'")
    attribute = sorted(r.data.tags["attribute"] for r in runs)[0]
    ids = {r.data.tags["strategy_code"]: r.info.run_id for r in runs
           if r.data.tags["attribute"] == attribute}
    return attribute, [ids["S0"], ids["S3"]]


async def _drive(server: str, experiment_id: str, audit: str, ids: list[str], out: Path,
                 port: int) -> Findings:
    import aiohttp

    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
    target = next(t for t in targets if t["type"] == "page")
    async with aiohttp.ClientSession() as session, session.ws_connect(
            target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
        page = Page(ws)
        await page.call("Page.enable")
        await page.call("Emulation.setDeviceMetricsOverride", width=1800, height=1000,
                        deviceScaleFactor=1, mobile=False)
        await page.open(f"{server}/#/experiments/{experiment_id}",
                        "/Overview|Run Name/.test(document.body.innerText)")
        text = await page.js("document.body.innerText")
        view = "GenAI overview" if "Overview" in text and "Traces" in text else "runs table"
        await page.shot(out / "experiment.png")
        query = urllib.parse.urlencode({
            "searchFilter": f"tags.audit = '{audit}' and tags.table = 'fairness'",
            "orderByKey": "tags.`mlflow.runName`", "orderByAsc": "true"})
        await page.open(f"{runs_url(server, experiment_id)}&{query}",
                        "document.querySelectorAll('[role=row]').length > 3")
        await page.js("Array.from(document.querySelectorAll('button')).find(b => "
                      "b.innerText.trim() === 'Columns').click()")
        await page.until("document.querySelectorAll('.du-bois-light-tree-treenode').length")
        await page.js(_PICK % json.dumps({"Metrics": METRICS, "Parameters": PARAMS}))
        await page.js("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', "
                      "bubbles: true})); document.body.click()")
        await asyncio.sleep(2)
        names = await page.js("Array.from(document.querySelectorAll('a')).map(a => "
                              "a.innerText.trim()).filter(t => t.startsWith('" + audit + " '))")
        headers = await page.js("[...new Set(Array.from(document.querySelectorAll("
                                "'[role=columnheader]')).map(h => h.innerText.trim())"
                                ".filter(x => x))]")
        await page.shot(out / "runs.png")
        await page.js("for (const v of document.querySelectorAll('.ag-body-horizontal-scroll-"
                      "viewport, .ag-center-cols-viewport')) v.scrollLeft = 100000")
        await asyncio.sleep(1.5)
        headers = [*headers, *(h for h in await page.js(
            "[...new Set(Array.from(document.querySelectorAll('[role=columnheader]'))"
            ".map(h => h.innerText.trim()).filter(x => x))]") if h not in headers)]
        await page.shot(out / "runs-right.png")
        compare = urllib.parse.quote(json.dumps(ids))
        await page.open(f"{server}/#/compare-runs?runs={compare}&experiments="
                        f"{urllib.parse.quote(json.dumps([experiment_id]))}",
                        "/Show diff only/.test(document.body.innerText)")
        rows = await page.js("Array.from(document.querySelectorAll('tr')).map(r => "
                             "Array.from(r.children).map(c => c.innerText.trim()))")
        await page.shot(out / "compare.png")
        # last: the shared view's columns stay in the page's state, and the column picker
        # above toggles (would untick) columns already shown
        await page.open(runs_url(server, experiment_id),
                        "document.querySelectorAll('[role=row]').length > 3")
        await asyncio.sleep(2)
        first = await page.js(_FIRST)
        await page.shot(out / "first.png")
    params = dict.fromkeys(f"{a}: {b} vs {c}" for a, b, c in (r for r in rows if len(r) == 3)
                           if b != c and a in ("strategy", "strategy_code", "model", "attribute",
                                               "audit"))
    return Findings(view, tuple(names), tuple(headers), tuple(params),
                    first_names=tuple(first["names"]), first_headers=tuple(first["headers"]),
                    first_count=str(first["count"]), first_cut=tuple(first["cut"]))


def check(results: Path, out: Path, *, audit: str | None = None,
          store: str | None = None) -> Findings:
    """Sync ``results`` (into ``store``, else a fresh SQLite store; a state already there is
    found, not logged again), open the views, write the PNGs into ``out``; the findings."""
    out.mkdir(parents=True, exist_ok=True)
    for key in ("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "MLFLOW_DISABLE_TELEMETRY"):
        os.environ.setdefault(key, "true")
    work = Path(tempfile.mkdtemp(prefix="bench-mlflow-ui-"))
    processes: list[subprocess.Popen[Any]] = []
    try:
        uri = store or f"sqlite:///{work / 'mlflow.db'}"
        done = sync_results(results, tracking_uri=uri, artifact_location=(work / "a").as_uri())
        audit = audit or sorted(p.name for p in results.iterdir() if (p / "run.json").is_file())[0]
        port, debug = _free_port(), _free_port()
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        log = (work / "server.log").open("w")
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
             "--workers", "1", "--backend-store-uri", uri], env=env, stdout=log,
            stderr=subprocess.STDOUT))
        server = f"http://127.0.0.1:{port}"
        _wait_http(f"{server}/health", seconds=120, process=processes[0])
        processes.append(subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", f"--remote-debugging-port={debug}",
             f"--user-data-dir={work / 'profile'}", "--window-size=1800,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait_http(f"http://127.0.0.1:{debug}/json/version", seconds=30, process=processes[1])
        _, ids = _cell_runs(uri, done.experiment_id, audit)
        return asyncio.run(_drive(server, done.experiment_id, audit, ids, out, debug))
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    """Run :func:`check` and print what it found; exit 1 when a promise is not kept."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--out", default=Path("/tmp/mlflow-ui"), type=Path)
    parser.add_argument("--audit", help="the audit shown (default: the first with results)")
    parser.add_argument("--store", help="an existing tracking store to open (sqlite:///...)")
    args = parser.parse_args(argv)
    found = check(args.results, args.out, audit=args.audit, store=args.store)
    print(f"experiment address opens on: {found.experiment_view}")
    print(f"the README's address (first screen): {found.first_count}; names "
          f"({len(found.first_names)}): {', '.join(found.first_names)}; cut by their cell: "
          f"{', '.join(found.first_cut) or 'none'}")
    print(f"first screen headers: {' | '.join(found.first_headers)}")
    print(f"runs table child names ({len(found.child_names)}): {', '.join(found.child_names)}")
    print(f"runs table headers: {' | '.join(found.headers)}")
    print(f"compare S0 vs S3 differing identity params: {'; '.join(found.differing_params)}")
    shots = ("experiment.png", "first.png", "runs.png", "runs-right.png", "compare.png")
    print(f"screenshots: {', '.join(str(args.out / n) for n in shots)}")
    good = (found.child_names and all(" S" in n for n in found.child_names[:1])
            and any(p.startswith("strategy:") for p in found.differing_params))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
