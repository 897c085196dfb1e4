"""The service: what the edges (REST, MCP, CLI, hooks) call, one package per feature.

``service.py`` builds ``MemoryService``, one object per feature (``service.writes``,
``service.states``, ``service.recall`` ...); ``server_parts.py`` holds what a server keeps open.

- ``write/``: every write, through the policy gate (``write/writes.py``, batches in ``batch.py``).
- ``lifecycle/``: a stored memory's states, the trash, retention and the purge, reconciliation.
- ``recall/``: what Claude Code's hooks get (``hook_events.py`` → ``context.py``).
- ``read_model/``: what the routes serve (lists, facets, apps, insights, OpenMemory's shapes).
- ``teams/``: membership, sharing, and team hits merged into search (``teams/search.py``).
- ``organise/``: scopes, links, entities. ``profile/``: tiers, heat, facts. ``hygiene/``,
  ``reflection/``, ``memory_files/`` (Anthropic's memory tool), ``portability/`` (export, import).
- ``consent.py`` (the consent queue and its rules), ``saved_config.py`` (OpenMemory's config
  document), ``embedding_model.py`` (the shipped model as the CLI sees it).

Below it: ``search/`` (retrieval and ranking), ``store/`` (a memory's values, owners, vectors,
the access log), ``policy/``, ``engine/``, ``db/``. docs/architecture.md has the walks.
"""
