"""``ccmem setup``, ``ccmem up`` and ``ccmem down``: the package route, without a checkout.

``setup`` makes the per-user directories, config.yaml, the admin token and the embedding model
(:mod:`claude_code_memory.stack.user_setup`); ``up`` runs it when needed and then ``ccmem stack
up`` with that config. Where the config is named (``--config``, ``$CCMEM_CONFIG``) or this code
runs from a checkout (its own config.yaml), ``up`` is ``stack up`` with it and no per-user files
are made; the directory it runs in plays no part.
``down`` stops what ``up`` started (``ccmem stack down`` with the config ``up`` reads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config import user_dirs
from ..config.locations import choose_config
from ..stack import start_lock, user_service, user_setup
from . import stack
from .common import ConfigOpt, err, out


def _report(report: user_setup.SetupReport) -> None:
    for made in report.created:
        err.print(f"made {made}", highlight=False, soft_wrap=True)
    err.print(
        f"config {report.config_file}\ndata   {report.data_dir}\nstate  {report.state_dir}",
        highlight=False,
        soft_wrap=True,
    )


def setup(
    skip_model: Annotated[
        bool, typer.Option("--skip-model", help="do not install the tokenizer or build the model")
    ] = False,
) -> None:
    """Make this user's config, data and state directories (XDG), the admin token and the model."""
    _report(user_setup.setup(model=not skip_model))
    out.print("ready: `ccmem up` starts the stack", highlight=False)


def up(
    ctx: typer.Context,
    services: stack.ServicesOpt = None,
    timeout: Annotated[float, typer.Option(help=stack.TIMEOUT_HELP)] = 120.0,
    config: ConfigOpt = None,
    foreground: stack.ForegroundOpt = False,
) -> None:
    """Set up this user's directories when needed (see `ccmem setup`), then `ccmem stack up`."""
    chosen: Path | None = config
    if choose_config(config).source in ("per-user", "defaults"):
        # Two first `ccmem up` at once (hooks of parallel sessions) make one admin token and
        # build the model once: the second waits and finds everything made.
        with start_lock.held(user_dirs()[2] / "run" / "setup.lock", wait=600):
            report = user_setup.setup()
        if report.created:
            _report(report)
        chosen = report.config_file
    stack.up(ctx, services=services, timeout=timeout, config=chosen, foreground=foreground)


def down(
    timeout: Annotated[float, typer.Option(help="seconds to wait for a clean stop before SIGKILL")] = 30.0,
    config: ConfigOpt = None,
) -> None:
    """Stop the stack `ccmem up` started (api, ui, proxy): `ccmem stack down` with the same config.

    A stack the user service started (`ccmem service install`) stays stopped until the next login.
    """
    stack.down(timeout=timeout, config=config)
    service = user_service.installed(Path.home())
    if service.enabled:
        out.print(
            f"the user service ({service.path}) starts it again at the next login; "
            "`ccmem service uninstall` removes it",
            highlight=False,
            soft_wrap=True,
        )
