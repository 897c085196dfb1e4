"""A throwaway PostgreSQL cluster for tests, from Debian's ``postgresql`` package.

``initdb`` refuses to run as root, so as root every PostgreSQL program runs as the ``postgres``
system user (the package creates it), in a fresh directory under the system temp dir that
user owns (pytest's own temp tree is mode 0700 to root, out of its reach). The server listens
on 127.0.0.1 only, on a free port, with its unix socket in that directory; it is stopped by
its PID with a fast shutdown and the directory is removed.

Starting a cluster (``initdb``, then the server) costs seconds; a database costs milliseconds.
The tests' fixture keeps one cluster per test process (one per xdist worker) and gives each
test a :class:`PostgresDatabase` of its own: a new database owned by a new role.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from .processes import free_port, require_tool, stop_process, wait_until

START_TIMEOUT = 30.0


def postgres_bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<major>/bin`` (15 on Debian 12), or ``$CCMEM_TEST_PG_BIN``."""
    override = os.environ.get("CCMEM_TEST_PG_BIN")
    if override:
        return Path(override)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    return Path(candidates[-1]) if candidates else Path("/usr/lib/postgresql/15/bin")


class PostgresCluster:
    """``initdb`` + ``postgres`` in a temp dir; ``url`` is a password login to a fresh database."""

    def __init__(self, *, database: str = "ccmem", user: str = "ccmem") -> None:
        self.bin_dir = postgres_bin_dir()
        self.database = database
        self.user = user
        self.password = secrets.token_hex(12)
        self.port = free_port()
        self.root: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    @property
    def socket_dir(self) -> Path:
        assert self.root is not None
        return self.root / "socket"

    @property
    def log_path(self) -> Path:
        assert self.root is not None
        return self.root / "postgres.log"

    def _tool(self, name: str) -> Path:
        return require_tool(self.bin_dir / name, "Debian's PostgreSQL server; apt-get install -y postgresql")

    def _as_owner(self) -> dict[str, Any]:
        """Popen arguments that drop root to the ``postgres`` user (initdb refuses root)."""
        if os.geteuid() != 0:
            return {}
        try:
            pwd.getpwnam("postgres")
        except KeyError as exc:
            raise RuntimeError("running as root but there is no postgres user to run PostgreSQL as") from exc
        return {"user": "postgres", "group": "postgres", "extra_groups": []}

    def _run(self, *command: str | Path) -> None:
        completed = subprocess.run(
            [str(part) for part in command],
            cwd=self.root,
            env=self._env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            **self._as_owner(),
        )
        if completed.returncode != 0:
            raise RuntimeError(
                f"{Path(command[0]).name} failed ({completed.returncode}):\n{completed.stderr}"
            )

    def _env(self) -> dict[str, str]:
        return {"PATH": f"{self.bin_dir}:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

    def start(self) -> PostgresCluster:
        initdb, postgres = self._tool("initdb"), self._tool("postgres")
        self.root = Path(tempfile.mkdtemp(prefix="ccmem-test-pg-"))
        data_dir = self.root / "data"
        self.socket_dir.mkdir()
        if os.geteuid() == 0:
            for path in (self.root, self.socket_dir):
                shutil.chown(path, "postgres", "postgres")
        self._run(
            initdb,
            "--pgdata",
            data_dir,
            "--username",
            "postgres",
            "--auth-local",
            "trust",
            "--auth-host",
            "scram-sha-256",
            "--encoding",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                str(postgres),
                "-D",
                str(data_dir),
                "-p",
                str(self.port),
                "-k",
                str(self.socket_dir),
                "-c",
                "listen_addresses=127.0.0.1",
                # A test database: durability buys nothing and costs seconds.
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            cwd=self.root,
            env=self._env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            **self._as_owner(),
        )
        log.close()
        try:
            wait_until(
                self._accepts_connections,
                timeout=START_TIMEOUT,
                process=self.process,
                what=f"postgres on port {self.port}",
                log=self.log_path,
            )
            self._create_database()
        except Exception:
            self.stop()
            raise
        return self

    def superuser_connection(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        """A connection over the unix socket as the ``postgres`` superuser (trust auth)."""
        return psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            user="postgres",
            dbname=dbname,
            autocommit=True,
            connect_timeout=5,
        )

    def _accepts_connections(self) -> bool:
        try:
            with self.superuser_connection():
                return True
        except psycopg.OperationalError:
            return False

    def _create_database(self) -> None:
        self._create(self.database, self.user, self.password)

    def _create(self, database: str, user: str, password: str) -> None:
        with self.superuser_connection() as connection:
            role = sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}")
            connection.execute(role.format(sql.Identifier(user), sql.Literal(password)))
            connection.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(user))
            )

    def new_database(self) -> PostgresDatabase:
        """A new, empty database on this cluster, owned by a new role with a password login."""
        name = f"test_{secrets.token_hex(6)}"
        database = PostgresDatabase(self, name, name, secrets.token_hex(12))
        self._create(database.database, database.user, database.password)
        return database

    def stop(self) -> None:
        if self.process is not None:
            # SIGINT is PostgreSQL's fast shutdown: it does not wait for clients to go away.
            stop_process(self.process, first_signal=signal.SIGINT)
            self.process = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class PostgresDatabase:
    """One database of a running :class:`PostgresCluster` and the role that owns it."""

    def __init__(self, cluster: PostgresCluster, database: str, user: str, password: str) -> None:
        self.cluster = cluster
        self.database = database
        self.user = user
        self.password = password

    @property
    def port(self) -> int:
        return self.cluster.port

    @property
    def url(self) -> str:
        """``postgresql://user:password@127.0.0.1:PORT/database``."""
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    def superuser_connection(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        return self.cluster.superuser_connection(dbname)

    def drop(self) -> None:
        """Drop the database (closing what is still connected to it) and its role."""
        if self.cluster.process is None:
            return
        with self.superuser_connection() as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.database))
            )
            connection.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(self.user)))
