"""``python -m claude_code_memory.cli``: the same as ``ccmem``."""

from . import main

main()
