"""Below search and the service: a memory's values and where they are kept.

- ``values.py``: ids, names, texts, timestamps and mem0's item shape.
- ``owners.py``: users and apps, the paused-app check.
- ``vectors.py``: ``Vectors``, the only door to the engine's writes (it stores only an
  ``Admitted`` from the policy gate) and to its searches.
- ``access_log.py``: which app read which memory, written in the background.
- ``shared_state.py``: state API replicas must see alike; ``leases.py``: which replica runs a job.
"""
