"""What breaks, counted: hostile and nested input, ``kill -9`` mid-write, a full disk, concurrent
writers, erased text left on disk, secrets past redaction, bad import rows, shared hook
sessions and read-only tokens. Each check prints figures that must be zero; ``suite`` runs
them all as one report."""
