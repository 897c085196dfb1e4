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
    server,
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
from .common import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_UNREACHABLE, err, unreachable

# One module per noun: server (serve, doctor), status, service (the user service), tokens,
# memories (add, search, list, get, export), imports (import: an export, an OpenMemory
# database), retention (purge, forget), consent, hygiene, connect (mcp-config); common holds the
# shared options, settings loading, the Remote and the output helpers.
app = typer.Typer(help="claude-code-memory: a self-hosted memory server for Claude Code and MCP clients.")


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"ccmem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="print the version and exit", is_eager=True, callback=_print_version
    ),
) -> None:
    """claude-code-memory: a self-hosted memory server for Claude Code and MCP clients."""


app.command()(server.serve)
app.command()(status.status)
app.command()(server.doctor)
app.command()(whoami.whoami)
app.add_typer(tokens.app, name="token")
app.add_typer(devices.app, name="devices")
app.command()(memories.add)
app.command()(memories.search)
app.command("list")(memories.list_memories)
app.command()(memories.get)
app.command()(memories.export)
app.add_typer(imports.app, name="import")
app.add_typer(sync.app, name="sync")
app.command()(retention.purge)
app.command()(retention.forget)
app.add_typer(consent.app, name="consent")
app.add_typer(teams.app, name="team")
app.add_typer(hygiene.app, name="hygiene")
app.command("mcp-config")(connect.mcp_config)
app.add_typer(connect_claude_code.app, name="connect")
app.add_typer(hooks.app, name="hooks")
app.add_typer(plugin.app, name="plugin")
# Extra arguments after `--` go to mitmdump.
app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(proxy.proxy)
app.add_typer(stack.app, name="stack")
# The package route: per-user directories, then the stack (cli/setup.py).
app.command()(setup.setup)
app.command()(setup.up)
app.command()(setup.down)
app.add_typer(service.app, name="service")
app.command()(ui.ui)


def main() -> None:
    try:
        result = app(standalone_mode=False)
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
