"""``ccmem whoami``: who the CLI acts as and where, as ``gh auth status`` says it: the user, the
server, where the token came from, the config file, and whether the server takes the token."""

from __future__ import annotations

from typing import Any

import typer

from ..config.locations import choose_config
from ..errors import Unauthorised, Unavailable
from . import common
from .common import ConfigOpt, JsonOpt, TokenOpt, UrlOpt, out


def whoami(
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Who `ccmem` acts as: the user, the server URL, where the token came from, the config file.

    Asks the server whether it takes the token (GET /api/v1/me). Exits 0 when it does, 1 when
    it refuses it or there is no token, 3 when nothing answers.
    """
    from ..client.remote import Remote

    chosen_config = choose_config(config)
    creds = common.credentials(config, url, token)
    report: dict[str, Any] = {
        "user": None,
        "admin": False,
        "url": creds.url,
        "token_source": creds.token.source if creds.token else None,
        "config": str(chosen_config.path.resolve()),
        "config_source": chosen_config.source,
        "config_exists": chosen_config.path.is_file(),
        "accepted": False,
        "reachable": True,
    }
    unreachable: Unavailable | None = None
    if creds.token is not None:
        client = Remote.for_credentials(creds)
        try:
            me = client.get("/api/v1/me")
            report |= {"user": me.get("user_id"), "admin": bool(me.get("is_admin")), "accepted": True}
        except Unauthorised:
            pass
        except Unavailable as exc:
            # What is known without the server is still said; the exit code says it is down.
            unreachable = exc
            saved = creds.connection
            report |= {"reachable": False, "user": saved.user if saved is not None else None}
        finally:
            client.close()
    if as_json:
        common.print_json(report)
    else:
        _print(report)
    if unreachable is not None:
        raise unreachable
    if not report["accepted"]:
        raise typer.Exit(common.EXIT_ERROR)


def _print(report: dict[str, Any]) -> None:
    if not report["reachable"]:
        known = f"{report['user']} (as connected)" if report["user"] else "not known"
        who = f"{known}: the server cannot be reached to check the token"
    elif not report["accepted"]:
        refused = "nobody: the server refuses this token"
        who = "nobody: no token" if report["token_source"] is None else refused
    elif report["admin"]:
        who = "the admin (acts for a user with --user)"
    else:
        who = str(report["user"])
    config = report["config"]
    if not report["config_exists"]:
        config += " (missing: built-in defaults)"
    lines = [
        ("user", who),
        ("server", report["url"]),
        ("token", report["token_source"] or "none (`ccmem connect claude-code` makes one)"),
        ("config", f"{config} ({report['config_source']})"),
    ]
    for name, value in lines:
        out.print(f"{name:<7}", common.text(str(value)), highlight=False, soft_wrap=True)
