"""``ccmem setup`` and ``ccmem up``: the package route, without a checkout.

``setup`` makes the per-user directories, config.yaml, the admin token and the embedding model
(:mod:`claude_code_memory.stack.user_setup`); ``up`` runs it when needed and then ``ccmem stack
up`` with that config. Where ``./config.yaml`` exists (a checkout) or ``--config`` /
``$CCMEM_CONFIG`` names one, ``up`` is ``stack up`` with it and no per-user files are made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..config import user_dirs
from ..stack import start_lock, user_setup
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
) -> None:
    """Set up this user's directories when needed (see `ccmem setup`), then `ccmem stack up`."""
    chosen: Path | None = config
    if chosen is None and "CCMEM_CONFIG" not in os.environ and not Path("config.yaml").exists():
        # Two first `ccmem up` at once (hooks of parallel sessions) make one admin token and
        # build the model once: the second waits and finds everything made.
        with start_lock.held(user_dirs()[2] / "run" / "setup.lock", wait=600):
            report = user_setup.setup()
        if report.created:
            _report(report)
        chosen = report.config_file
    stack.up(ctx, services=services, timeout=timeout, config=chosen)
