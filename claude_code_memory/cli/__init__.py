"""`ccmem`: run the memory server, manage tokens, and work with memories from the shell.

Commands that touch memories talk to the running server over REST: ``--url``, else the server
``ccmem connect`` connected (unless ``--config`` / ``$CCMEM_CONFIG`` names a config), else the
configured host and port; with a bearer token: ``--token``, else ``$CCMEM_TOKEN``, else the
connected user's, else the admin token from ``.env``. ``ccmem whoami`` says which. The config
file is never the working directory's: ``--config``, ``$CCMEM_CONFIG``, this installation's
(a checkout's config.yaml), the per-user one ``ccmem setup`` wrote, else built-in defaults.
Every command that prints data takes ``--json``.

Exit codes:

* 0: success.
* 1: an error, printed as one line on stderr (``error: ...``): bad input, an unknown id, a
  refused token, a failed ``doctor`` check, an unhealthy server.
* 2: bad usage (an unknown option, a missing argument, an invalid value), with the usage line.
* 3: the server cannot be reached (nothing accepts connections at the URL), for commands that
  need a running server.
* 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys

import typer

from ..errors import MemoryStackError
from . import server
from .common import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_UNREACHABLE, err, unreachable

#: Extra arguments after `--` go to mitmdump.
PROXY_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True}
HELP = "claude-code-memory: a self-hosted memory server for Claude Code and MCP clients."


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"ccmem {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", help="print the version and exit", is_eager=True, callback=_print_version
    ),
) -> None:
    """claude-code-memory: a self-hosted memory server for Claude Code and MCP clients."""


def _alone(command: str) -> typer.Typer | None:
    """The commands that start the server, built alone: ``serve``, and what a hook that starts
    it runs before it (``up``, then ``stack supervise``). Their start does not wait for the
    other commands' imports (restart time); their ``--help`` reads the same. None: another."""
    application = typer.Typer(help=HELP)
    application.callback()(_root)
    if command == "serve":
        application.command()(server.serve)
        return application
    if command not in ("up", "stack"):
        return None
    _services(application)  # the stack runs what the root command has (cli/stack.py)
    if command == "up":
        from . import setup

        application.command()(setup.up)
    else:
        from . import stack

        application.add_typer(stack.app, name="stack")
    return application


def _services(application: typer.Typer) -> None:
    """The commands the stack runs as its services: serve, ui, proxy."""
    from . import proxy, ui

    application.command()(server.serve)
    application.command(context_settings=PROXY_SETTINGS)(proxy.proxy)
    application.command()(ui.ui)


def _everything() -> typer.Typer:
    # One module per noun: server (serve, doctor), status, service (the user service), tokens,
    # memories (add, search, list, get, export), imports (import: an export, an OpenMemory
    # database), retention (purge, forget), consent, hygiene, connect (mcp-config); common holds
    # the shared options, settings loading, the Remote and the output helpers.
    from . import (
        connect,
        connect_claude_code,
        consent,
        devices,
        hooks,
        hygiene,
        imports,
        memories,
        plugin,
        proxy,
        retention,
        service,
        setup,
        stack,
        status,
        sync,
        teams,
        tokens,
        ui,
        whoami,
    )

    application = typer.Typer(help=HELP)
    application.callback()(_root)
    application.command()(server.serve)
    application.command()(status.status)
    application.command()(server.doctor)
    application.command()(whoami.whoami)
    application.add_typer(tokens.app, name="token")
    application.add_typer(devices.app, name="devices")
    application.command()(memories.add)
    application.command()(memories.search)
    application.command("list")(memories.list_memories)
    application.command()(memories.get)
    application.command()(memories.export)
    application.add_typer(imports.app, name="import")
    application.add_typer(sync.app, name="sync")
    application.command()(retention.purge)
    application.command()(retention.forget)
    application.add_typer(consent.app, name="consent")
    application.add_typer(teams.app, name="team")
    application.add_typer(hygiene.app, name="hygiene")
    application.command("mcp-config")(connect.mcp_config)
    application.add_typer(connect_claude_code.app, name="connect")
    application.add_typer(hooks.app, name="hooks")
    application.add_typer(plugin.app, name="plugin")
    application.command(context_settings=PROXY_SETTINGS)(proxy.proxy)
    application.add_typer(stack.app, name="stack")
    # The package route: per-user directories, then the stack (cli/setup.py).
    application.command()(setup.setup)
    application.command()(setup.up)
    application.command()(setup.down)
    application.add_typer(service.app, name="service")
    application.command()(ui.ui)
    return application


#: Every command (the documentation and the tests drive it); built on first use.
app: typer.Typer


def __getattr__(name: str) -> typer.Typer:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()["app"] = application = _everything()
    return application


def main() -> None:
    try:
        application = _alone(sys.argv[1]) if len(sys.argv) > 1 else None
        result = (application or _everything())(standalone_mode=False)
    except MemoryStackError as exc:
        err.print(f"[red]error:[/] {exc.message}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_UNREACHABLE if unreachable(exc) else EXIT_ERROR)
    except (KeyboardInterrupt, typer.Abort):
        err.print("interrupted", highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        # Usage errors (typer's vendored click): print the usage line, exit 2.
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(exc.exit_code)
        raise
    if isinstance(result, int) and result:
        sys.exit(result)


if __name__ == "__main__":
    main()
