"""The management web UI: its own process (``ccmem ui``), an HTTP client of the API.

It holds no database or engine of its own: every page is built from REST calls made with the
signed-in user's token (see docs/ui.md). ``tests/test_ui_boundary.py`` keeps it that way.
"""
