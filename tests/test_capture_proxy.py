"""The capture proxy end to end: real clients -> real mitmdump (``ccmem proxy``) -> fake Anthropic.

Everything runs on 127.0.0.1: the memory server (``ccmem serve``, consent on), the proxy with
our addon in its own virtualenv, and the fake upstream speaking the real wire format with
waits between events. The clients are the real Claude Code CLI and the anthropic SDK.
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import anthropic
import httpx
import pytest

from tests.support.capture_proxy import CaptureProxy, require_mitmdump
from tests.support.fake_anthropic import FakeAnthropic, ToolThenAnswer, always_text, self_signed_certificate
from tests.support.node_clients import claude_bin, claude_env, mcp_config, run_claude
from tests.support.processes import free_port, wait_until
from tests.support.server import MemoryServer

pytestmark = pytest.mark.e2e

API_KEY = "sk-ant-api03-" + "K3y" * 30 + "-PROXYTST"
SECRET = "sk-ant-api03-" + "s3C" * 30 + "-LEAKTEST"
ANSWER = "Teal is a lovely colour; I will keep that in mind for you."
EVENT_DELAY = 0.15
# Between the events Claude Code reads: its runs add a Node process and TLS to the path, and on a
# busy 2-core machine (two test workers) one of them can stall for a few tenths of a second, which
# at 0.15 s bunched three deltas as a buffering proxy would. Longer gaps keep one stall from
# looking like buffering; a buffering proxy still delivers every delta at once.
CLAUDE_EVENT_DELAY = 0.4


@pytest.fixture(autouse=True)
def _mitmdump() -> None:
    require_mitmdump()


class Memory(NamedTuple):
    server: MemoryServer
    token: str
    user: str


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("capture-server")) as server:
        yield server


_users = itertools.count(1)


@pytest.fixture
def memory(memory_server: MemoryServer) -> Memory:
    """A new user on the module's server: each test has a consent queue of its own."""
    if memory_server.process is None:  # a test that stopped it failed before starting it again
        memory_server.start()
    user = f"capture-{next(_users)}"
    return Memory(memory_server, memory_server.make_token(user), user)


def pending(server: MemoryServer, token: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.base_url}/api/v1/consent/pending",
        params={"size": 100},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    response.raise_for_status()
    return list(response.json()["items"])


def wait_for_pending(
    server: MemoryServer, token: str, count: int, timeout: float = 30
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        items = pending(server, token)
        if len(items) >= count or time.monotonic() > deadline:
            return items
        time.sleep(0.2)


def assert_no_credentials(proxy: CaptureProxy) -> None:
    """The client's API key appears nowhere the proxy writes: its log, its outbox, its CA folder."""
    assert API_KEY not in proxy.log()
    for path in proxy.data_dir.rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path


# -- Claude Code -------------------------------------------------------------------------------


@dataclass
class TimedRun:
    returncode: int
    lines: list[tuple[float, dict[str, Any]]]
    stderr: str

    def deltas(self) -> list[float]:
        """When each text delta reached Claude Code's output (``--include-partial-messages``)."""
        return [
            at
            for at, event in self.lines
            if event.get("type") == "stream_event"
            and event.get("event", {}).get("type") == "content_block_delta"
        ]

    def init(self) -> dict[str, Any]:
        return next(e for _, e in self.lines if e.get("type") == "system" and e.get("subtype") == "init")

    def describe(self) -> str:
        return f"exit {self.returncode}\n{[e for _, e in self.lines][-5:]}\n{self.stderr[-3000:]}"


def reverse_proxy(tmp_path: Path, memory: Memory, upstream: FakeAnthropic) -> CaptureProxy:
    """A reverse-mode capture proxy in front of ``upstream``, delivering to the test server."""
    server, token, _ = memory
    return CaptureProxy(
        tmp_path / "proxy",
        mode="reverse",
        api_url=server.base_url,
        token=token,
        reverse_upstream=upstream.base_url,
    )


def run_claude_timed(
    prompt: str, env: dict[str, str], home: Path, extra: list[str] | None = None
) -> TimedRun:
    workdir = home / "project"
    workdir.mkdir(parents=True, exist_ok=True)
    command = [str(claude_bin()), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    command += ["--include-partial-messages", *(extra or [])]
    process = subprocess.Popen(
        command,
        env=env,
        cwd=workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lines: list[tuple[float, dict[str, Any]]] = []
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            if raw.strip().startswith(b"{"):
                lines.append((time.monotonic(), json.loads(raw)))
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    return TimedRun(process.returncode, lines, stderr)


def assert_streamed(run: TimedRun, delay: float = CLAUDE_EVENT_DELAY) -> None:
    deltas = run.deltas()
    assert len(deltas) >= 4, run.describe()
    # The upstream waits ``delay`` between events: a buffering proxy would deliver them at once.
    gaps = [b - a for a, b in zip(deltas, deltas[1:], strict=False)]
    # (Sum and median, not each gap: on a loaded machine two deltas can still arrive together.)
    assert sum(gaps) >= 0.6 * delay * len(gaps), gaps
    assert sorted(gaps)[len(gaps) // 2] >= 0.5 * delay, gaps


def assert_captured_turn(server: MemoryServer, token: str, proxy: CaptureProxy, home: Path) -> dict[str, Any]:
    items = wait_for_pending(server, token, 1)
    assert len(items) == 1, proxy.log()
    item = items[0]
    assert item["content"] == (
        "User: Remember that my favourite colour is teal. My key is [REDACTED:anthropic_api_key]"
        f"\n\nAssistant: {ANSWER}"
    )
    assert SECRET not in json.dumps(item)
    assert item["redactions"] == 1  # the proxy's redaction, counted although the server saw none
    assert item["channel"] == "capture"
    assert item["app"] == "claude-code"
    # The proxy sends Claude Code's working directory; the server files the turn under its name.
    assert item["project"] == (home / "project").name
    assert item["model"]
    assert item["conversation_id"]
    return item


def approve_and_find(memory: Memory, item: dict[str, Any]) -> None:
    server, token, user = memory
    headers = {"Authorization": f"Bearer {token}"}
    approved = httpx.post(
        f"{server.base_url}/api/v1/consent/{item['id']}/approve", headers=headers, timeout=30
    )
    assert approved.status_code == 200, approved.text
    found = httpx.post(
        f"{server.base_url}/api/v1/memories/filter",
        json={"user_id": user, "search_query": "teal", "size": 10},
        headers=headers,
        timeout=30,
    )
    assert found.status_code == 200, found.text
    texts = [entry.get("content") or entry.get("text") or "" for entry in found.json()["items"]]
    assert any("teal" in text for text in texts), texts


def test_claude_code_through_the_reverse_proxy(memory: Memory, tmp_path: Path) -> None:
    server, token, _ = memory
    upstream = FakeAnthropic(always_text(ANSWER), first_event_delay=0.2, event_delay=CLAUDE_EVENT_DELAY)
    with upstream:
        proxy = reverse_proxy(tmp_path, memory, upstream)
        with proxy:
            home = tmp_path / "home"
            env = claude_env(home, proxy.url) | {"ANTHROPIC_API_KEY": API_KEY}
            run = run_claude_timed(
                f"Remember that my favourite colour is teal. My key is {SECRET}", env, home
            )
            assert run.returncode == 0, run.describe()
            assert_streamed(run)
            item = assert_captured_turn(server, token, proxy, home)
            # Claude Code's own session id is the conversation id.
            assert item["conversation_id"] == run.init()["session_id"]
            # It went through the proxy, and the upstream saw the key the proxy never keeps.
            assert upstream.message_requests and upstream.message_requests[0].headers["x-api-key"] == API_KEY
        assert_no_credentials(proxy)
    approve_and_find(memory, item)


def test_claude_code_through_the_forward_proxy(memory: Memory, tmp_path: Path) -> None:
    """HTTPS_PROXY + our CA (NODE_EXTRA_CA_CERTS); the MCP URL on 127.0.0.1 bypasses it (NO_PROXY)."""
    server, token, user = memory
    cert, key = self_signed_certificate(tmp_path / "tls", "localhost")
    upstream = FakeAnthropic(
        always_text(ANSWER),
        host="localhost",
        tls=(cert, key),
        first_event_delay=0.2,
        event_delay=CLAUDE_EVENT_DELAY,
    )
    with upstream:
        proxy = CaptureProxy(
            tmp_path / "proxy",
            mode="forward",
            api_url=server.base_url,
            token=token,
            upstream_hosts=["localhost"],
            # The test's upstream has a self-signed certificate; mitmproxy must verify it against it.
            extra_args=["--set", f"ssl_verify_upstream_trusted_ca={cert}"],
        )
        with proxy:
            assert proxy.ca_cert.exists()
            home = tmp_path / "home"
            env = claude_env(home, upstream.base_url) | {
                "ANTHROPIC_API_KEY": API_KEY,
                "HTTPS_PROXY": proxy.url,
                "NODE_EXTRA_CA_CERTS": str(proxy.ca_cert),
                "NO_PROXY": "127.0.0.1",
                "no_proxy": "127.0.0.1",
            }
            mcp = mcp_config("memory", f"{server.base_url}/mcp/claude-code/sse/{user}", token)
            config_path = home / "mcp.json"
            home.mkdir(parents=True, exist_ok=True)
            config_path.write_text(json.dumps(mcp))
            run = run_claude_timed(
                f"Remember that my favourite colour is teal. My key is {SECRET}",
                env,
                home,
                ["--strict-mcp-config", "--mcp-config", str(config_path)],
            )
            assert run.returncode == 0, run.describe() + proxy.log()
            assert_streamed(run)
            assert [s.get("status") for s in run.init().get("mcp_servers", [])] == ["connected"], run.init()
            assert_captured_turn(server, token, proxy, home)
            # TLS was intercepted for the upstream host (the flow is in mitmdump's log)...
            assert "POST https://localhost:" in proxy.log()
        assert_no_credentials(proxy)
        # ...and the MCP traffic did not go through the proxy at all.
        assert "/mcp/" not in proxy.log()


# -- the anthropic SDK, errors, outages ---------------------------------------------------------


@pytest.fixture
def reverse(memory: Memory, tmp_path: Path) -> Iterator[tuple[FakeAnthropic, CaptureProxy]]:
    with (
        FakeAnthropic(always_text(ANSWER), event_delay=EVENT_DELAY) as upstream,
        reverse_proxy(tmp_path, memory, upstream) as proxy,
    ):
        yield upstream, proxy


def sdk(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=API_KEY, base_url=base_url, max_retries=0, timeout=30)


def test_anthropic_sdk_streamed_and_not(memory, reverse) -> None:
    server, token, _ = memory
    upstream, proxy = reverse
    client = sdk(proxy.url)
    arrivals = []
    with client.messages.stream(
        model="claude-opus-5-5",
        max_tokens=100,
        messages=[{"role": "user", "content": "Streamed: I like teal."}],
    ) as stream:
        for _text in stream.text_stream:
            arrivals.append(time.monotonic())
        assert stream.get_final_message().content[0].text == ANSWER
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    assert len(gaps) >= 3 and sum(gaps) >= 0.6 * EVENT_DELAY * len(gaps), gaps
    assert sorted(gaps)[len(gaps) // 2] >= 0.5 * EVENT_DELAY, gaps
    upstream.gzip = True  # a compressed JSON answer goes through decoded by the SDK, captured by us
    message = client.messages.create(
        model="claude-opus-5-5",
        max_tokens=100,
        messages=[{"role": "user", "content": "Plain: I like rust."}],
    )
    assert message.content[0].text == ANSWER
    # The compressed body reaches the client byte for byte as upstream sent it (and is captured).
    plain = {
        "model": "claude-opus-5-5",
        "max_tokens": 9,
        "messages": [{"role": "user", "content": "Gzip: hi"}],
    }
    direct, proxied = raw_exchange(upstream.base_url, plain), raw_exchange(proxy.url, plain)
    assert proxied[0] == direct[0] == 200 and proxied[1] == direct[1]
    assert proxied[1]["content-encoding"] == "gzip" and proxied[2][:2] == b"\x1f\x8b"
    assert same_message(gzip.decompress(proxied[2]), gzip.decompress(direct[2]))
    items = wait_for_pending(server, token, 3)
    contents = sorted(item["content"] for item in items)
    assert contents == [
        f"User: Gzip: hi\n\nAssistant: {ANSWER}",
        f"User: Plain: I like rust.\n\nAssistant: {ANSWER}",
        f"User: Streamed: I like teal.\n\nAssistant: {ANSWER}",
    ]


def same_message(first: bytes, second: bytes) -> bool:
    """Equal but for the message id (each answer has its own)."""
    return re.sub(rb"msg_fake\d+", b"", first) == re.sub(rb"msg_fake\d+", b"", second)


def raw_exchange(base_url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes, str | None]:
    """Status, headers, raw (undecoded) body and the transport error, if the stream broke."""
    headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", "accept-encoding": "gzip"}
    chunks: list[bytes] = []
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", f"{base_url}/v1/messages", json=body, headers=headers) as response,
    ):
        try:
            for chunk in response.iter_raw():
                chunks.append(chunk)
            error = None
        except httpx.HTTPError as exc:
            error = exc.__class__.__name__
        kept = {
            k: v
            for k, v in response.headers.items()
            if k in ("content-type", "retry-after", "content-encoding")
        }
        # Each answer has its own message id; everything else must be byte for byte the same.
        body = re.sub(rb"msg_fake\d+", b"msg_fake", b"".join(chunks))
        return response.status_code, kept, body, error


def sdk_failure(base_url: str) -> type[BaseException]:
    try:
        with sdk(base_url).messages.stream(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "Hi"}]
        ) as s:
            s.get_final_message()
    except Exception as exc:
        return type(exc)
    raise AssertionError("the request did not fail")


@pytest.mark.parametrize("fault", ["rate_limit", "server_error", "cut"])
def test_upstream_errors_reach_the_client_as_sent_and_nothing_is_stored(memory, reverse, fault) -> None:
    server, token, _ = memory
    upstream, proxy = reverse
    upstream.fault = fault
    body = {
        "model": "claude-opus-5-5",
        "max_tokens": 50,
        "stream": True,
        "messages": [{"role": "user", "content": "Hello"}],
    }
    direct = raw_exchange(upstream.base_url, body)
    proxied = raw_exchange(proxy.url, body)
    assert proxied[:3] == direct[:3]
    if fault == "cut":
        assert direct[3] is not None and proxied[3] is not None  # both saw the stream break
        assert b"message_start" in proxied[2] and b"message_stop" not in proxied[2]
    else:
        assert proxied[0] == {"rate_limit": 429, "server_error": 500}[fault]
    # The SDK fails the same way either way (an APIStatusError, or the transport error of a cut).
    assert sdk_failure(proxy.url) == sdk_failure(upstream.base_url)
    if fault != "cut":
        assert issubclass(sdk_failure(proxy.url), anthropic.APIStatusError)
    # A normal turn afterwards is captured: proof the pipeline was alive while nothing was stored.
    upstream.fault = None
    sdk(proxy.url).messages.create(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "After the error"}]
    )
    items = wait_for_pending(server, token, 1)
    assert [item["content"].split("\n\n")[0] for item in items] == ["User: After the error"]
    # The outbox drops the row once the server's answer is back, which may come after the item
    # is listed: wait for it, then nothing of the errors is left queued.
    wait_until(lambda: proxy.outbox_count() == 0, timeout=15, what="the outbox to drain")


def test_api_outage_and_proxy_restart_deliver_every_turn_once(memory, reverse) -> None:
    server, token, _ = memory
    upstream, proxy = reverse
    server.stop()
    client = sdk(proxy.url)
    for number in range(10):
        text = f"Conversation {number}: my favourite number is {number * 7}."
        if number % 2:
            client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": text}])
        else:
            with client.messages.stream(
                model="m", max_tokens=5, messages=[{"role": "user", "content": text}]
            ) as s:
                s.get_final_message()
    deadline = time.monotonic() + 15
    while proxy.outbox_count() < 10 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proxy.outbox_count() == 10, proxy.log()
    assert proxy.stop() == 0  # SIGTERM: a clean shutdown
    proxy.start()
    server.start()
    items = wait_for_pending(server, token, 10, timeout=60)
    deadline = time.monotonic() + 15
    while proxy.outbox_count() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proxy.outbox_count() == 0, proxy.log()
    time.sleep(1.5)  # longer than a retry: nothing arrives twice
    items = pending(server, token)
    users = sorted(item["content"].split("\n\n")[0] for item in items)
    assert users == sorted(f"User: Conversation {n}: my favourite number is {n * 7}." for n in range(10))


def test_forward_mode_tunnels_other_hosts_without_interception(tmp_path: Path) -> None:
    """Only upstream_hosts are TLS-intercepted: a client that trusts only the real certificate
    gets through to any other host, and is refused (mitmproxy's certificate) on a listed one."""
    cert, key = self_signed_certificate(tmp_path / "tls", "localhost")
    with FakeAnthropic(always_text(ANSWER), host="127.0.0.1", tls=(cert, key)) as upstream:
        proxy = CaptureProxy(
            tmp_path / "proxy",
            mode="forward",
            api_url=f"http://127.0.0.1:{free_port()}",
            token="unused",
            upstream_hosts=["localhost"],
            extra_args=["--set", f"ssl_verify_upstream_trusted_ca={cert}"],
        )
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Not for memory"}]}
        trusted = ssl.create_default_context(cafile=str(cert))
        with proxy, httpx.Client(proxy=proxy.url, verify=trusted, trust_env=False, timeout=30) as client:
            tunnelled = client.post(
                f"{upstream.base_url}/v1/messages", json=body, headers={"x-api-key": API_KEY}
            )
            assert tunnelled.status_code == 200
            assert tunnelled.json()["content"][0]["text"] == ANSWER
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                client.post(f"https://localhost:{upstream.port}/v1/messages", json=body)
            # A health check's bare connections (Docker's, the stack's) leave no lines behind.
            for _ in range(3):
                socket.create_connection(("127.0.0.1", proxy.port), timeout=5).close()
            time.sleep(0.5)
            assert proxy.outbox_count() == 0
            assert f"POST {upstream.base_url}" not in proxy.log()  # no flow: the bytes were only tunnelled
            assert "client connect" not in proxy.log() and "client disconnect" not in proxy.log()
        assert_no_credentials(proxy)


def test_a_claude_code_tool_loop_is_captured_as_one_turn(memory: Memory, tmp_path: Path) -> None:
    """Prompt -> ToolSearch -> MCP search_memory -> answer: three requests, one memory."""
    server, token, user = memory
    tool = "mcp__memory__search_memory"
    answer = "You like the zebrafinch build tool best."
    script = ToolThenAnswer(tool, {"query": "favourite build tool"}, answer)
    with FakeAnthropic(script) as upstream:
        proxy = reverse_proxy(tmp_path, memory, upstream)
        with proxy:
            home = tmp_path / "home"
            home.mkdir()
            run = run_claude(
                "Which build tool do I like best?",
                home=home,
                upstream_url=proxy.url,
                mcp_config=mcp_config("memory", f"{server.base_url}/mcp/claude-code/sse/{user}", token),
                allowed_tools=["mcp__memory"],
            )
            assert run.event("result").get("result") == answer, run.describe()
            assert len(upstream.message_requests) >= 3, run.describe()
            items = wait_for_pending(server, token, 1)
            time.sleep(1.5)  # every request has ended: still one turn
            items = pending(server, token)
    assert len(items) == 1, items
    assert (
        items[0]["content"]
        == f"User: Which build tool do I like best?\n\nAssistant: Let me check your memories.\n\n{answer}"
    )
