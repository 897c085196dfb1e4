"""Capture of Claude conversations: pure, standard-library-only parsing shared with the proxy.

The capture proxy runs mitmproxy in its own virtualenv and imports this package from the
repository (``PYTHONPATH``), so nothing here, nor this ``__init__``, may import a third-party
package (``tests/test_architecture.py`` checks it).
"""
