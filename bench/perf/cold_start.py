"""From a process started to its first answered search, beside the floor of the same work. JSON.

    .venv/bin/python -m bench.perf.cold_start [--rounds 7] [--size 10000] [--store DIR] [--up]
        [--code DIR --code-label REV] [--out FILE]

Side by side in one run, alternating round by round, each process started fresh:

* ``floor``: a bare Python process that imports what the server runs on (fastapi, uvicorn,
  numpy, onnxruntime, sqlalchemy, qdrant_edge), loads the same ONNX model the way the server
  does (``claude_code_memory.engine.onnx_model.load_session``, with the tokenizer from
  ``tokenizers``) and answers one HTTP request by embedding its text (a search cannot answer
  without the query's vector, and a session's first run costs more than the next);
* ``serve``: ``ccmem serve`` on a fresh copy of a store of ``--size`` memories (built once with
  ``bench/harness/bulk_load.py``, kept in ``--store`` when given), to its first answered
  ``POST /api/v1/memories/search`` with a user's token;
* ``serve_before`` (with ``--code DIR``): the same server from another checkout of the package
  (an earlier revision: ``git archive REV | tar -x -C DIR``), run by this virtualenv with
  ``PYTHONPATH=DIR``, on the same copy of the store;
* ``up`` (with ``--up``): ``ccmem up -s api`` (the supervisor, in the background) on a
  throwaway HOME's config pointing at the copy, to the first answered search, asked from the
  start as a hook that starts the server does (``up_returned_s``: when ``up`` itself returned).

Each process is timed from just before it is started: the client connects every 5 ms until
the port accepts, then sends the request at once (a search that arrives while the server warms
waits for it); ``health_s`` is when ``GET /health``, asked in parallel from the same moment,
first answered (any status: 503 while the server starts). The report has each variant's
samples and medians, the ratio of each to ``floor`` (the target for ``serve``: at most 1.5),
and ``machine_speed`` before and after. Copies of the store are made before a round's clock
starts. Not a test: the figures are the machine's (its load is in ``machine_speed``).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import machine_speed
from bench.harness.bulk_load import bulk_load
from bench.harness.paths import CCMEM, RESULTS, ROOT
from bench.harness.server import free_port

QUERY = "what did Alice deploy last week"
USER = "bench"
#: The floor: what the server imports, the model loaded as the server loads it, one request.
FLOOR = """
import os, sys
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import fastapi, uvicorn, numpy, onnxruntime, sqlalchemy, qdrant_edge
from tokenizers import Tokenizer
from claude_code_memory.engine import onnx_model

session = onnx_model.load_session(onnx_model.default_model_path(), onnx_model.default_threads())
tokenizer = Tokenizer.from_file(str(onnx_model.default_tokenizer_path()))
app = fastapi.FastAPI()

@app.get("/health")
def health() -> dict:
    return {"status": "ok"}

@app.post("/search")
def search(body: dict) -> dict:
    encoded = tokenizer.encode(body["query"])
    ids = numpy.array([encoded.ids], dtype=numpy.int64)
    feeds = {"input_ids": ids, "attention_mask": numpy.ones_like(ids)}
    feeds["token_type_ids"] = numpy.zeros_like(ids)
    names = {i.name for i in session.get_inputs()}
    out = session.run(None, {k: v for k, v in feeds.items() if k in names})[0][0].mean(axis=0)
    return {"results": [float(out[0])]}

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


class Store:
    """A kept store of ``size`` memories, a user's token in it, and copies of it for each round."""

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        self.admin = secrets.token_urlsafe(24)
        data = path / "data"
        report: dict[str, Any] = {}
        if not (path / "token").exists():
            report = bulk_load(data, total=size, user_id=USER)
            token = subprocess.run(
                [str(CCMEM), "token", "create", "--user", USER, "--data-dir", str(data)],
                env=self.env(),
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            (path / "token").write_text(token)
        self.token = (path / "token").read_text().strip()
        self.built = report

    def env(self, code: Path | None = None) -> dict[str, str]:
        env = {
            **os.environ,
            "CCMEM_ADMIN_TOKEN": self.admin,
            "CCMEM_CONFIG": str((code or ROOT) / "config.yaml"),
        }
        env["CCMEM_HYGIENE__SCHEDULE_HOURS"] = "0"
        if code is not None:
            env["PYTHONPATH"] = str(code)
        return env

    def copy(self) -> Path:
        work = Path(tempfile.mkdtemp(prefix="ccmem-cold-"))
        shutil.copytree(self.path / "data", work / "data")
        return work


def _connect(port: int, process: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None:
            raise SystemExit(f"the process exited ({process.returncode}) before it listened")
        time.sleep(0.005)
    raise SystemExit("the process never listened")


def _first_health(client: httpx.Client, started: float, found: dict[str, float], deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            client.get("/health")
        except httpx.HTTPError:
            time.sleep(0.005)
            continue
        found["health_s"] = time.perf_counter() - started
        return


def timed(
    argv: list[str], port: int, path: str, headers: dict[str, str], env: dict[str, str], log: Path
) -> dict[str, float]:
    """Start ``argv``; seconds to the port accepting, to ``/health`` answered and to ``path``'s
    first 200 (a POST of the query); the process is stopped by its PID afterwards."""
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    found: dict[str, float] = {}
    # Made before the clock starts: a client's TLS context alone costs tens of milliseconds.
    prober = httpx.Client(base_url=base, timeout=30)
    client = httpx.Client(base_url=base, headers=headers, timeout=60)
    with log.open("w") as sink, prober, client:
        started = time.perf_counter()
        process = subprocess.Popen(argv, env=env, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT)
        try:
            health = threading.Thread(target=_first_health, args=(prober, started, found, deadline))
            health.start()
            _connect(port, process, deadline)
            found["listening_s"] = time.perf_counter() - started
            while True:
                response = client.post(path, json={"query": QUERY, "limit": 10})
                if response.status_code == 200:
                    break
                if response.status_code != 503 or time.monotonic() > deadline:
                    raise SystemExit(f"{path} answered {response.status_code}: {response.text[:300]}")
                time.sleep(0.005)
            found["first_search_s"] = time.perf_counter() - started
            assert response.json()["results"], "the first search found nothing"
            health.join()
        finally:
            _stop(process)
    return {key: round(value, 3) for key, value in found.items()}


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def floor(store: Store, work: Path) -> dict[str, float]:
    port = free_port()
    argv = [sys.executable, "-c", FLOOR, str(port)]
    return timed(argv, port, "/search", {}, store.env(), work / "floor.log")


def serve(store: Store, work: Path, code: Path | None = None) -> dict[str, float]:
    port = free_port()
    argv = [str(CCMEM), "serve", "--port", str(port), "--data-dir", str(work / "data")]
    headers = {"Authorization": f"Bearer {store.token}"}
    return timed(argv, port, "/api/v1/memories/search", headers, store.env(code), work / "serve.log")


def up(store: Store, work: Path) -> dict[str, float]:
    """``ccmem up -s api`` on a throwaway HOME whose settings serve the copy, to the first
    answered search (asked from the start, as a hook that started it does) and to ``up``'s own
    return; stopped with ``ccmem down``."""
    home = work / "home"
    port = free_port()
    env = {
        **store.env(),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "CCMEM_SERVER__PORT": str(port),
        "CCMEM_SERVER__DATA_DIR": str(work / "data"),
    }
    env.pop("CCMEM_CONFIG")
    found: dict[str, float] = {}
    deadline = time.monotonic() + 120
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {store.token}"}, timeout=60
    )
    with (work / "up.log").open("w") as sink, client:
        started = time.perf_counter()
        process = subprocess.Popen(
            [str(CCMEM), "up", "-s", "api"], env=env, stdout=sink, stderr=subprocess.STDOUT
        )
        try:
            while time.monotonic() < deadline and "first_search_s" not in found:
                try:
                    response = client.post("/api/v1/memories/search", json={"query": QUERY, "limit": 10})
                except httpx.HTTPError:
                    time.sleep(0.005)
                    continue
                if response.status_code == 200:
                    found["first_search_s"] = time.perf_counter() - started
                time.sleep(0.005)
            process.wait(120)
            found["up_returned_s"] = time.perf_counter() - started
        finally:
            _stop(process)
            subprocess.run([str(CCMEM), "down"], env=env, stdout=sink, stderr=subprocess.STDOUT, check=False)
    if "first_search_s" not in found:
        raise SystemExit(f"ccmem up: no search answered; see {work / 'up.log'}")
    return {key: round(value, 3) for key, value in found.items()}


def _revision() -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip()


def summary(samples: list[dict[str, float]]) -> dict[str, Any]:
    keys = sorted({key for sample in samples for key in sample})
    return {
        "samples": samples,
        "median": {key: round(statistics.median(s[key] for s in samples if key in s), 3) for key in keys},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--store", type=Path, help="keep the store here (built when missing)")
    parser.add_argument("--code", type=Path, help="another checkout to run beside this one (serve_before)")
    parser.add_argument("--code-label", default="", help="what --code is (a revision), for the report")
    parser.add_argument("--up", action="store_true", help="also time `ccmem up -s api`")
    parser.add_argument("--out", type=Path, default=RESULTS / "cold_start_10k.json")
    args = parser.parse_args()

    kept = args.store is not None
    root = args.store or Path(tempfile.mkdtemp(prefix="ccmem-cold-store-"))
    try:
        speed_before = machine_speed.measure()
        store = Store(root, args.size)
        variants: dict[str, Any] = {"floor": floor, "serve": serve}
        if args.code is not None:
            variants["serve_before"] = lambda s, w: serve(s, w, args.code)
        if args.up:
            variants["up"] = up
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
        for round_ in range(args.rounds + 1):  # the first round warms the page cache: not kept
            order = list(variants) if round_ % 2 else list(reversed(variants))
            for name in order:
                work = store.copy()
                try:
                    sample = variants[name](store, work)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                if round_:
                    samples[name].append(sample)
                print(name, sample, file=sys.stderr)
        report: dict[str, Any] = {
            "what": "process start to the first answered search: ccmem serve on a copy of a "
            f"{args.size}-memory store, beside a bare process with the same libraries and model "
            "answering one request (the floor), alternating",
            "command": "python -m bench.perf.cold_start " + " ".join(sys.argv[1:]),
            "revision": _revision(),
            "before_code": {"code": str(args.code), "label": args.code_label} if args.code else None,
            "size": args.size,
            "rounds": args.rounds,
            "store": store.built or "kept",
            "machine_speed": {"before": speed_before},
        }
        for name, values in samples.items():
            report[name] = summary(values)
        first = {name: report[name]["median"]["first_search_s"] for name in samples}
        report["ratio_to_floor"] = {
            name: round(value / first["floor"], 2) for name, value in first.items() if name != "floor"
        }
        report["machine_speed"]["after"] = machine_speed.measure()
    finally:
        if not kept:
            shutil.rmtree(root, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
