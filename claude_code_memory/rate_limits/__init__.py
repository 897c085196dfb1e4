"""What both HTTP edges (the API and the web UI) count requests with: ``limiter.py`` (the request
limits per token and per address, the sign-in throttle, the address a request is counted under).
It imports nothing else of the package, so the UI may use it without the API."""
