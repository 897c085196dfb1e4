"""The capture proxy's mitmproxy addon (loaded by ``proxy/ccmem_proxy.py``), its outbox and sender."""
