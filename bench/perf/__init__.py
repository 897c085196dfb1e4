"""How fast and how big: search and write latency by store size, throughput under load, start-up
and restart, what each feature costs a request (hooks, MCP, OAuth, the proxy, teams, replicas),
bytes on disk and where the CPU time goes."""
