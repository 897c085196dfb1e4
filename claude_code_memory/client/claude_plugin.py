"""Our Claude Code plugin in Claude Code's state: where it is enabled, and putting the user's
settings back as they were when it goes.

    enabled_in(document) -> bool                    the plugin is enabled in a settings document
    Snapshot.take(settings, credentials) / .load() / .save() / .restore()

The pinned Claude Code keeps what ``plugin marketplace add``, ``install`` and ``configure``
change in ``~/.claude/settings.json`` (``extraKnownMarketplaces``, ``enabledPlugins``,
``pluginConfigs``) and the sensitive options in ``~/.claude/.credentials.json``
(``pluginSecrets``). ``plugin uninstall`` and ``marketplace remove`` leave those keys behind as
empty objects, re-indent the file and reorder its keys. A :class:`Snapshot` taken before the
install restores the file's own bytes afterwards when nothing else in it changed meanwhile;
when something did, only the empty keys Claude Code left are removed, in the file's old
indentation. See docs/plugin.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import claude_settings as cs

PLUGIN = "ccmem"
MARKETPLACE = "claude-code-memory"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
#: Keys Claude Code adds to settings.json for plugins, and leaves empty when they go.
PLUGIN_KEYS = ("extraKnownMarketplaces", "enabledPlugins", "pluginConfigs")
SNAPSHOT_SUFFIX = ".ccmem-plugin-snapshot.json"


def marketplace_root() -> Path | None:
    """The directory holding ``.claude-plugin/marketplace.json``: the checkout, else the copy
    a wheel ships inside the package (None when neither is there)."""
    package = Path(__file__).resolve().parents[1]
    for root in (package.parent, package / "marketplace"):
        if (root / ".claude-plugin" / "marketplace.json").is_file():
            return root
    return None


def enabled_in(document: Mapping[str, Any]) -> bool:
    """Whether ``document`` (a settings.json) enables our plugin, from whichever marketplace."""
    enabled = document.get("enabledPlugins")
    if not isinstance(enabled, Mapping):
        return False
    return any(str(plugin_id).split("@", 1)[0] == PLUGIN and on for plugin_id, on in enabled.items())


def without_leftovers(document: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` without the plugin keys Claude Code left empty that ``before`` did not have."""
    return {
        key: value
        for key, value in document.items()
        if not (key in PLUGIN_KEYS and value in ({}, []) and key not in before)
    }


@dataclass
class Snapshot:
    """A settings file and a credentials file as they were before the plugin was installed.

    ``settings_text`` is the file's text (None: there was no file); of the credentials only
    whether the file existed is kept, never its secrets.
    """

    settings_path: str
    settings_text: str | None
    credentials_path: str
    credentials_existed: bool
    marketplace_added: bool = False

    @staticmethod
    def file_for(settings: Path) -> Path:
        return settings.with_name(settings.name + SNAPSHOT_SUFFIX)

    @classmethod
    def take(cls, settings: Path, credentials: Path) -> Snapshot:
        text = settings.read_text(encoding="utf-8") if settings.exists() else None
        return cls(str(settings), text, str(credentials), credentials.exists())

    @classmethod
    def load(cls, settings: Path) -> Snapshot | None:
        path = cls.file_for(settings)
        if not path.exists():
            return None
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path} is not a snapshot of ours ({exc}); remove it") from exc

    def save(self) -> Path:
        path = self.file_for(Path(self.settings_path))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        path.chmod(0o600)
        return path

    def restore(self) -> bool:
        """Put the settings back; True when they are byte for byte what they were, False when
        the user's own changes since were kept (and only Claude Code's leftovers removed)."""
        settings = Path(self.settings_path)
        before, _ = _parse(self.settings_text)
        now, now_text = cs.load(settings)
        tidied = without_leftovers(now, before)
        exact = tidied == before
        if exact and self.settings_text is None:
            settings.unlink(missing_ok=True)
        elif exact:
            if now_text != self.settings_text:
                settings.write_text(self.settings_text or "", encoding="utf-8")
        elif tidied != now:
            settings.write_text(cs.dump(tidied, self.settings_text or now_text), encoding="utf-8")
        credentials = Path(self.credentials_path)
        if not self.credentials_existed and credentials.exists():
            left, _ = cs.load(credentials)
            if not without_empty_secrets(left):
                credentials.unlink()
        self.file_for(settings).unlink(missing_ok=True)
        return exact


def without_empty_secrets(document: Mapping[str, Any]) -> dict[str, Any]:
    """A credentials document without an empty ``pluginSecrets`` (Claude Code leaves ``{}``)."""
    return {key: value for key, value in document.items() if not (key == "pluginSecrets" and not value)}


def _parse(text: str | None) -> tuple[dict[str, Any], str | None]:
    if text is None or not text.strip():
        return {}, text
    document = json.loads(text)
    return (document if isinstance(document, dict) else {}), text
