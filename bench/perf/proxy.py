"""What the capture proxy costs a streaming client: proxy versus direct, in one run.

    .venv/bin/python -m bench.perf.proxy [--streams 40] [--concurrency 20] [--rounds 5]
        [--first-delay 0.1] [--event-delay 0.03] [--mode reverse|forward]

A fake Anthropic upstream on 127.0.0.1 (tests/support/fake_anthropic.py, the real SSE format)
waits ``--first-delay`` before its first event and ``--event-delay`` between events. The same
streamed ``POST /v1/messages`` is sent directly and through ``ccmem proxy`` (real mitmdump with
the capture addon, which taps and captures every turn), alternating, and for each stream the
client notes when every text delta arrives. Reported (JSON on stdout):

* ``ttft_ms``: time to the first text delta, median and p95, direct and proxied, and the
  median added by the proxy (target: <= 5 ms);
* ``gap_ms``: the gaps between consecutive deltas (they should equal ``--event-delay``: a
  buffering proxy would bunch them up), median and p95 for both;
* the same under ``--concurrency`` simultaneous streams, ``--rounds`` times;
* in reverse mode, a baseline: plain mitmdump (streaming, no addon) as ``mitmdump_plain``, to
  tell mitmproxy's own cost from the addon's.

The memory API is not running: captured turns wait in the proxy's outbox, so only the proxy's
own work is measured (capture runs on its delivery thread, after each stream).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.capture_proxy import MITMDUMP, CaptureProxy
from tests.support.fake_anthropic import FakeAnthropic, always_text, self_signed_certificate
from tests.support.processes import free_port, port_open, stop_process, wait_until

ANSWER = "The capture proxy passes every event on as soon as it arrives, so nobody waits for it."
BODY = {
    "model": "claude-opus-5-5",
    "max_tokens": 200,
    "stream": True,
    "metadata": {"user_id": json.dumps({"session_id": "bench"})},
    "messages": [{"role": "user", "content": "Tell me about the capture proxy."}],
}


def one_stream(client: httpx.Client, url: str) -> tuple[float, list[float]]:
    """Seconds to the first text delta, and the gaps between deltas."""
    headers = {"x-api-key": "bench-key", "anthropic-version": "2023-06-01"}
    arrivals: list[float] = []
    started = time.perf_counter()
    with client.stream("POST", f"{url}/v1/messages?beta=true", json=BODY, headers=headers) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data:") and '"text_delta"' in line:
                arrivals.append(time.perf_counter())
    if not arrivals:
        raise RuntimeError("no text delta arrived")
    return arrivals[0] - started, [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered) * 1000, 2),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 2),
        "n": len(ordered),
    }


def sequential(targets: dict[str, tuple[str, httpx.Client]], streams: int) -> dict[str, Any]:
    results: dict[str, dict[str, list[float]]] = {name: {"ttft": [], "gaps": []} for name in targets}
    for _ in range(streams):
        for name, (url, client) in targets.items():  # alternating, so drift hits both alike
            ttft, gaps = one_stream(client, url)
            results[name]["ttft"].append(ttft)
            results[name]["gaps"].extend(gaps)
    return report(results)


def concurrent(
    targets: dict[str, tuple[str, Callable[[], httpx.Client]]], concurrency: int, rounds: int
) -> dict[str, Any]:
    results: dict[str, dict[str, list[float]]] = {name: {"ttft": [], "gaps": []} for name in targets}
    lock = threading.Lock()
    for _ in range(rounds):
        for name, (url, make_client) in targets.items():
            barrier = threading.Barrier(concurrency)

            def run(
                name: str = name, url: str = url, make_client: Any = make_client, barrier: Any = barrier
            ) -> None:
                with make_client() as client:
                    one_stream(client, url)  # warm the connection
                    barrier.wait()
                    ttft, gaps = one_stream(client, url)
                with lock:
                    results[name]["ttft"].append(ttft)
                    results[name]["gaps"].extend(gaps)

            threads = [threading.Thread(target=run) for _ in range(concurrency)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    return report(results)


def report(results: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ttft_ms": {name: summary(r["ttft"]) for name, r in results.items()},
        "gap_ms": {name: summary(r["gaps"]) for name, r in results.items()},
    }
    others = [name for name in results if name != "direct"]
    for key, metric in (("ttft_added_median_ms", "ttft_ms"), ("gap_change_median_ms", "gap_ms")):
        base = out[metric]["direct"]["median"]
        out[key] = {name: round(out[metric][name]["median"] - base, 2) for name in others}
    return out


@contextmanager
def plain_mitmdump(work: Path, upstream: str) -> Iterator[str]:
    """mitmdump in reverse mode, streaming, without our addon: what mitmproxy itself costs."""
    port = free_port()
    command = [str(MITMDUMP), "--mode", f"reverse:{upstream}", "--listen-host", "127.0.0.1"]
    command += [
        "--listen-port",
        str(port),
        "--set",
        f"confdir={work / 'plain'}",
        "--set",
        "stream_large_bodies=1",
    ]
    log = (work / "plain.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        wait_until(port_open(port), timeout=30, process=process, what="plain mitmdump")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--first-delay", type=float, default=0.1)
    parser.add_argument("--event-delay", type=float, default=0.03)
    parser.add_argument("--mode", choices=["reverse", "forward"], default="reverse")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp:
        work = Path(tmp)
        tls: tuple[Path, Path] | None = None
        if args.mode == "forward":
            tls = self_signed_certificate(work / "tls", "localhost")
        upstream = FakeAnthropic(
            always_text(ANSWER),
            host="localhost" if tls else "127.0.0.1",
            tls=tls,
            first_event_delay=args.first_delay,
            event_delay=args.event_delay,
        )
        with upstream:
            dead_api = f"http://127.0.0.1:{free_port()}"
            if args.mode == "reverse":
                proxy = CaptureProxy(
                    work / "proxy",
                    mode="reverse",
                    api_url=dead_api,
                    token="bench",
                    reverse_upstream=upstream.base_url,
                )
            else:
                proxy = CaptureProxy(
                    work / "proxy",
                    mode="forward",
                    api_url=dead_api,
                    token="bench",
                    upstream_hosts=["localhost"],
                    extra_args=["--set", f"ssl_verify_upstream_trusted_ca={tls[0]}"] if tls else [],
                )
            with proxy:
                if args.mode == "reverse":
                    proxied_url = proxy.url

                    def make_direct() -> httpx.Client:
                        return httpx.Client(timeout=60, trust_env=False)

                    def make_proxied() -> httpx.Client:
                        return httpx.Client(timeout=60, trust_env=False)
                else:
                    assert tls is not None
                    proxied_url, cert, ca = upstream.base_url, str(tls[0]), str(proxy.ca_cert)

                    def make_direct() -> httpx.Client:
                        return httpx.Client(timeout=60, verify=cert, trust_env=False)

                    def make_proxied() -> httpx.Client:
                        return httpx.Client(timeout=60, verify=ca, proxy=proxy.url, trust_env=False)

                targets = {"direct": (upstream.base_url, make_direct), "proxy": (proxied_url, make_proxied)}
                with ExitStack() as stack:
                    if args.mode == "reverse":  # the baseline: mitmproxy without our addon
                        plain_url = stack.enter_context(plain_mitmdump(work, upstream.base_url))
                        targets["mitmdump_plain"] = (plain_url, make_direct)
                    clients = {
                        name: (url, stack.enter_context(make())) for name, (url, make) in targets.items()
                    }
                    for url, client in clients.values():
                        one_stream(client, url)  # warm-up: connections, TLS, the proxy's first flow
                    seq = sequential(clients, args.streams)
                    conc = concurrent(targets, args.concurrency, args.rounds)
                captured = proxy.outbox_count()
    result = {
        "mode": args.mode,
        "upstream": {
            "first_event_delay_ms": args.first_delay * 1000,
            "event_delay_ms": args.event_delay * 1000,
        },
        "sequential": seq,
        f"concurrent_{args.concurrency}": conc,
        "turns_captured_in_outbox": captured,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
