"""Shared fixtures: a real redis-server on a free port, the demo site, and the offline switch
for tldextract."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

os.environ["TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS"] = ""
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "example_project"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A throw-away ``redis-server`` process that can be stopped and started again on the same
    port, for fault tests. With ``persist`` it keeps its data across a restart (append-only
    file), as a production Redis would; otherwise nothing is written to disk."""

    def __init__(self, workdir: Path, *, persist: bool = False) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed (Debian: apt-get install redis-server)")
        self.binary = binary
        self.port = free_port()
        self.workdir = workdir
        self.persist = persist
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_once = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server; a first start that loses its port to another process (taken
        between :func:`free_port` and the server's bind) tries another port."""
        tried = []
        for attempt in range(3):
            if attempt and not self.started_once:
                self.port = free_port()
            tried.append(self.port)
            self._launch()
            if self._serving():
                self.started_once = True
                return
            self.stop()
            if self.started_once:
                break  # a restart keeps its port: the fault tests reconnect to it
        raise RuntimeError(f"redis-server could not serve on port(s) {', '.join(map(str, tried))}")

    def _launch(self) -> None:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes" if self.persist else "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _serving(self) -> bool:
        """Whether this server, and not another process on its port, answers there."""
        assert self.proc is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                # no retries: a port that refuses or never answers is looked at again here
                client = redis.Redis(
                    host="127.0.0.1",
                    port=self.port,
                    socket_timeout=1,
                    socket_connect_timeout=0.2,
                    retry=None,
                )
                with client:
                    return int(client.info("server")["process_id"]) == self.proc.pid
            except (redis.RedisError, OSError):
                time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def demo_site() -> Iterator[str]:
    from demo.site import DemoSite

    with DemoSite() as site:
        yield site.url
