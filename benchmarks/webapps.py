"""Real web applications served on localhost for the URL-rule benchmarks, each filled with the
same content on every run.

- Trac (``pip install Trac``): a fresh environment with 60 tickets, served by ``tracd``.
- Roundup (``pip install roundup``): the classic tracker with five users and 60 issues, served
  by its WSGI application under ``wsgiref`` (``roundup-server`` refuses to run as root).
- gitweb (Debian's ``gitweb``): one repository of 30 commits over two branches and three tags,
  run as a CGI script by a small gateway that, unlike Python's ``CGIHTTPRequestHandler``, sends
  the status the script gives (gitweb's "404 - Unknown commit object" is a 404, as behind a
  real web server). Every tree, blob and diff is reachable under a branch,
  a tag and a commit id, each in several views: duplicates by the hundred.

Each context manager yields the URL to start from and stops the server on exit.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "output"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _add_tickets(env_path: Path, n: int = 60, seed: int = 5) -> None:
    """Fill the environment with ``n`` tickets of varied status, owner, milestone, version and
    keywords. Without tickets every report and query of a fresh environment shows the same
    empty list, so the crawl would teach that a query's filters do not matter."""
    from trac.env import Environment
    from trac.ticket.model import Ticket

    rng = random.Random(seed)
    words = [
        "crash",
        "login",
        "search",
        "export",
        "import",
        "render",
        "cache",
        "timeout",
        "unicode",
        "upload",
    ]
    people = ["alice", "bob", "carol", "dave", "erin"]
    env = Environment(str(env_path))
    for i in range(n):
        ticket = Ticket(env)
        ticket["summary"] = f"{' '.join(rng.sample(words, 3)).capitalize()} ({i + 1})"
        ticket["description"] = " ".join(rng.choices(words, k=30))
        ticket["reporter"] = rng.choice(people)
        ticket["owner"] = rng.choice(people)
        ticket["type"] = rng.choice(["defect", "enhancement", "task"])
        ticket["priority"] = rng.choice(["blocker", "critical", "major", "minor", "trivial"])
        ticket["component"] = rng.choice(["component1", "component2"])
        ticket["milestone"] = rng.choice(["milestone1", "milestone2", "milestone3", ""])
        ticket["version"] = rng.choice(["1.0", "2.0", ""])
        ticket["keywords"] = " ".join(rng.sample(["firefox", "opera", "safari", "mobile"], 2))
        ticket["status"] = rng.choice(["new", "assigned", "accepted", "closed"])
        if ticket["status"] == "closed":
            ticket["resolution"] = rng.choice(["fixed", "duplicate", "wontfix", "invalid"])
        ticket.insert()
    env.shutdown()


@contextmanager
def trac_site() -> Iterator[str]:
    """A fresh Trac environment with tickets (:func:`_add_tickets`), served by tracd on a free
    port; yields the wiki URL."""
    env = OUT / "trac-env"
    if env.exists():
        shutil.rmtree(env)
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["trac-admin", str(env), "initenv", "Demo", "sqlite:db/trac.db"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    _add_tickets(env)
    port = _free_port()
    with _serving(["tracd", "--port", str(port), "--hostname", "127.0.0.1", str(env)], port):
        yield f"http://127.0.0.1:{port}/trac-env/wiki"


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(200):
        if proc.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


@contextmanager
def _serving(cmd: list[str], port: int, **kwargs: object) -> Iterator[None]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    try:
        _wait_for(port, proc)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


_ROUNDUP_FILL = """
import os, random, sys
home = sys.argv[1]
os.chdir(sys.prefix)  # the demo installer finds its templates from here
from roundup import demo, instance
demo.install_demo(home, "sqlite", "classic", use_port=1, use_host="127.0.0.1")
db = instance.open(home).open("admin")
rng = random.Random(7)
users = [
    db.user.create(username=n, realname=n.title(), roles="User", address=n + "@example.org")
    for n in ("alice", "bob", "carol", "dave", "erin")
]
words = "crash login search export import render cache timeout unicode upload".split()
keywords = [db.keyword.create(name=w) for w in words[:5]]
for i in range(60):
    title = f"{rng.choice(words).title()} fails when {rng.choice(words)} meets {rng.choice(words)}"
    text = " ".join(rng.choice(words) for _ in range(30))
    msg = db.msg.create(content="Steps: " + text, author=rng.choice(users))
    db.issue.create(
        title=f"{title} ({i + 1})", status=str(rng.randint(1, 8)),
        priority=str(rng.randint(1, 5)), assignedto=rng.choice(users),
        keyword=[rng.choice(keywords)], messages=[msg],
    )
db.commit()
db.close()
"""

_ROUNDUP_SERVE = """
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from roundup.cgi.wsgi_handler import RequestDispatcher

class Quiet(WSGIRequestHandler):
    def log_message(self, *args): pass

class Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True

app = RequestDispatcher(sys.argv[1])
make_server("127.0.0.1", int(sys.argv[2]), app, Threading, Quiet).serve_forever()
"""


@contextmanager
def roundup_site() -> Iterator[str]:
    """Roundup's classic tracker with 60 issues, as an anonymous visitor sees it."""
    home = OUT / "roundup-home"
    if home.exists():
        shutil.rmtree(home)
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-c", _ROUNDUP_FILL, str(home)], check=True, stdout=subprocess.DEVNULL
    )
    port = _free_port()
    with _serving([sys.executable, "-c", _ROUNDUP_SERVE, str(home), str(port)], port):
        yield f"http://127.0.0.1:{port}/"


_GITWEB_SERVE = """
import os, subprocess, sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SCRIPT = "/cgi-bin/gitweb.cgi"

class Handler(SimpleHTTPRequestHandler):
    def log_message(self, *args): pass

    def do_GET(self):
        parts = urlsplit(self.path)
        if parts.path != SCRIPT:
            return super().do_GET()
        env = {
            **os.environ, "GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "GET",
            "SCRIPT_NAME": SCRIPT, "PATH_INFO": "", "QUERY_STRING": parts.query,
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": str(self.server.server_port),
            "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": self.client_address[0],
            "HTTP_ACCEPT": self.headers.get("Accept", "*/*"),
        }
        out = subprocess.run(["." + SCRIPT], env=env, capture_output=True).stdout
        # the headers end at the first blank line; the body stays as the script wrote it
        crlf, lf = out.find(b"\\r\\n\\r\\n"), out.find(b"\\n\\n")
        ends = [(i, n) for i, n in ((crlf, 4), (lf, 2)) if i >= 0]
        at, size = min(ends) if ends else (len(out), 0)
        head, body = out[:at], out[at + size:]
        headers = [line.split(b":", 1) for line in head.splitlines() if b":" in line]
        status = next((int(v.split()[0]) for k, v in headers if k.lower() == b"status"), 200)
        self.send_response(status)
        for k, v in headers:
            if k.lower() != b"status":
                self.send_header(k.decode("latin-1"), v.strip().decode("latin-1"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

os.chdir(sys.argv[1])
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
"""


def _git_history(work: Path) -> None:
    """30 commits touching eight modules and three notes files, a branch and three tags, all
    dated, so every run makes the same commit ids."""

    def git(*args: str, date: str = "2024-01-01 12:00:00 +0000") -> None:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Ann",
            "GIT_AUTHOR_EMAIL": "ann@example.org",
            "GIT_COMMITTER_NAME": "Ann",
            "GIT_COMMITTER_EMAIL": "ann@example.org",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
        }
        subprocess.run(["git", *args], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)

    git("init", "-q", "-b", "main")
    (work / "src").mkdir()
    (work / "docs").mkdir()
    for i in range(1, 31):
        with (work / "src" / f"mod{i % 8}.py").open("a") as f:
            f.write(f"def step_{i}():\n    return {i}\n")
        with (work / "docs" / f"notes{i % 3}.txt").open("a") as f:
            f.write(f"Notes for change {i}\n")
        date = f"2024-01-{i % 28 + 1:02d} 12:00:00 +0000"
        git("add", "-A", date=date)
        git("commit", "-q", "-m", f"Change {i}: touch mod{i % 8}", date=date)
        if i % 10 == 0:
            git("tag", f"v0.{i // 10}", date=date)
        if i == 15:
            git("branch", "stable", date=date)


@contextmanager
def gitweb_site() -> Iterator[str]:
    """gitweb over one repository (:func:`_git_history`)."""
    script = Path("/usr/share/gitweb/gitweb.cgi")
    if not script.exists():
        raise RuntimeError("gitweb is not installed: apt-get install gitweb")
    # gitweb needs CGI.pm, which Debian's gitweb only recommends: without it every page is
    # empty and a crawl stops after one download
    cgi = ["perl", "-MCGI", "-e", "1"]
    if shutil.which("perl") is None or subprocess.run(cgi, capture_output=True).returncode:
        raise RuntimeError("gitweb needs Perl's CGI module: apt-get install libcgi-pm-perl")
    # a fresh directory per run, removed at the end
    root = Path(tempfile.mkdtemp(prefix="gitweb-"))
    os.chmod(root, 0o755)
    (root / "work").mkdir()
    _git_history(root / "work")
    subprocess.run(
        ["git", "clone", "-q", "--bare", "work", "repos/project.git"], cwd=root, check=True
    )
    (root / "repos" / "project.git" / "description").write_text("Demo project\n")
    (root / "gitweb.conf").write_text(
        f'our $projectroot = "{root / "repos"}";\nour $site_name = "Demo git";\n'
    )
    (root / "www" / "cgi-bin").mkdir(parents=True)
    shutil.copy(script, root / "www" / "cgi-bin" / "gitweb.cgi")
    (root / "www" / "static").symlink_to("/usr/share/gitweb/static")
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    port = _free_port()
    env = {**os.environ, "GITWEB_CONFIG": str(root / "gitweb.conf")}
    serve = [sys.executable, "-c", _GITWEB_SERVE, str(root / "www"), str(port)]
    try:
        with _serving(serve, port, env=env):
            yield f"http://127.0.0.1:{port}/cgi-bin/gitweb.cgi"
    finally:
        shutil.rmtree(root, ignore_errors=True)
