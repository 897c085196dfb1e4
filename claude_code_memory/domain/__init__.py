"""What every layer names, from the edges down to the database, and owns nothing else:
``memory_state.py`` (``MemoryState``: the states a memory moves through). Standard library only."""
