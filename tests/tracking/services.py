"""Real services for the team-tracking test: a throwaway PostgreSQL server (Debian's
binaries, a new cluster in a temporary folder, password auth on 127.0.0.1) and an MLflow
tracking server on it with its own artifact store. Both stop, and their folders go, when
the `with` block ends."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

PG_USER = "pkb"
PG_DB = "mlflow"
START_LIMIT_S = 240.0
"""The tracking server's first start migrates an empty database: 20-60 s on 2 busy cores."""


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    password: str
    """Only ever handed over in PGPASSWORD: no URI below holds it."""

    def uri(self, db: str = PG_DB) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{db}"


def _pg_bindir() -> Path | None:
    """Debian keeps initdb and postgres under /usr/lib/postgresql/<version>/bin, off PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL server with a database PG_DB owned by PG_USER, who needs a password."""
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server here (as root, scripts/install.sh --test installs Debian's postgresql)")
    # SQLAlchemy 2.1 (under MLflow) opens postgresql:// URIs with psycopg 3.
    psycopg = pytest.importorskip("psycopg", reason="no psycopg (pip install 'psycopg[binary]')")

    # PostgreSQL refuses to run as root: as root, the cluster belongs to the package's user.
    run_as = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="pkb-pg-"))
    data, password = root / "data", secrets.token_urlsafe(18)
    (root / "pw").write_text(password)
    if run_as:
        shutil.chown(root, run_as)
        shutil.chown(root / "pw", run_as)
    port = _free_port()
    log = open(root / "postgres.log", "w")
    proc = None
    try:
        subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", PG_USER, "--pwfile", str(root / "pw"),
                        "--auth=scram-sha-256", "-E", "UTF8", "--no-instructions"],
                       user=run_as, check=True, stdout=log, stderr=subprocess.STDOUT, timeout=120)
        (root / "pw").unlink()
        # Durability off: a test cluster, thrown away afterwards.
        proc = subprocess.Popen([str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(root),
                                 "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                                 "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
                                user=run_as, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = psycopg.connect(host="127.0.0.1", port=port, user=PG_USER, password=password,
                                       dbname="postgres", connect_timeout=2, autocommit=True)
                break
            except psycopg.OperationalError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("PostgreSQL did not start:\n" + (root / "postgres.log").read_text())
                time.sleep(0.2)
        with conn:
            conn.execute(f"CREATE DATABASE {PG_DB}")
        yield Postgres("127.0.0.1", port, PG_USER, password)
    finally:
        if proc is not None:
            proc.terminate()  # SIGTERM: PostgreSQL's smart shutdown; nothing is connected by now
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def _start(cmd: list[str], env: dict[str, str], workdir: Path, log_path: Path) -> subprocess.Popen:
    with open(log_path, "w") as log:
        return subprocess.Popen(cmd, env=env, cwd=workdir, start_new_session=True, stdout=log,
                                stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 15)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()


@dataclass(frozen=True)
class TrackingServer:
    url: str
    artifacts: Path
    log: Path


@contextlib.contextmanager
def tracking_server(pg: Postgres, workdir: Path, env: dict[str, str]) -> Iterator[TrackingServer]:
    """`mlflow server` as a team runs it: PostgreSQL behind it, artifacts served from its
    own store, pkb's page in front when pkb_ray is installed. The database password reaches
    it in PGPASSWORD only."""
    from pkb_ray.tracking.rest import wait_until_up
    from pkb_ray.tracking.ui import app_registered, server_env

    port = _free_port()
    artifacts = workdir / "server-artifacts"
    log_path = workdir / "mlflow-server.log"
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", pg.uri(),
           "--artifacts-destination", artifacts.as_uri(), "--host", "127.0.0.1", "--port", str(port),
           "--workers", "1", *(["--app-name", "pkb"] if app_registered() else []),
           "--uvicorn-opts", "--no-access-log --log-level warning"]
    proc = _start(cmd, server_env({**env, "PGPASSWORD": pg.password}), workdir, log_path)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until_up(url, START_LIMIT_S, proc)
        except (TimeoutError, RuntimeError) as exc:
            raise AssertionError(f"{exc}\n{log_path.read_text()[-3000:]}") from None
        yield TrackingServer(url, artifacts, log_path)
    finally:
        _stop(proc)


@contextlib.contextmanager
def auth_server(workdir: Path, env: dict[str, str], user: str, password: str) -> Iterator[str]:
    """`mlflow server --app-name basic-auth` (MLflow's own login, `mlflow[auth]`) on SQLite,
    whose one user is `user` with `password`; yields its URL. Up means it answers 401."""
    pytest.importorskip("flask_wtf", reason="no Flask-WTF for MLflow's basic auth (pip install 'mlflow[auth]')")
    from pkb_ray.tracking.ui import server_env

    port = _free_port()
    ini = workdir / "basic_auth.ini"
    ini.write_text("[mlflow]\ndefault_permission = READ\n"
                   f"database_uri = sqlite:///{workdir / 'auth.db'}\nadmin_username = {user}\n"
                   "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")
    cmd = [sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth",
           "--backend-store-uri", f"sqlite:///{workdir / 'auth-store.db'}",
           "--artifacts-destination", (workdir / "auth-artifacts").as_uri(),
           "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
           "--uvicorn-opts", "--no-access-log --log-level warning"]
    log_path = workdir / "auth-server.log"
    proc = _start(cmd, server_env({**env, "MLFLOW_AUTH_CONFIG_PATH": str(ini), "MLFLOW_AUTH_ADMIN_PASSWORD": password,
                                   "MLFLOW_FLASK_SERVER_SECRET_KEY": secrets.token_hex(16)}), workdir, log_path)
    url = f"http://127.0.0.1:{port}"
    try:
        import urllib.error
        import urllib.request

        deadline = time.monotonic() + START_LIMIT_S
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=2).close()
                raise AssertionError(f"{url} answered without credentials")
            except urllib.error.HTTPError as exc:
                if exc.code == 401:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the auth server did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.3)
        yield url
    finally:
        _stop(proc)
