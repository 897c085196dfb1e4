"""The benchmarks and fault checks: scripts that measure the product on this machine and print JSON.

Run from the repository root as ``.venv/bin/python -m bench.<folder>.<script>``; each script's
docstring says what it measures and how, ``bench/README.md`` lists them all with the results
file each one's figures are kept in (``bench/results/``) and the page that quotes them.

* ``perf``: how fast, how big, what a feature costs (latency, throughput, start-up, ingest,
  profiles, load);
* ``quality``: how good the answers are (retrieval on LoCoMo and LongMemEval, scopes, hygiene,
  extraction rules, embedding models);
* ``faults``: what breaks under hostile input, crashes, full disks and concurrent writers (the
  trust audit's checks; ``faults.suite`` runs them all);
* ``harness``: what the others share (a real server to measure, synthetic memories and queries,
  percentiles, bulk loading, the machine's speed); no question of its own.
"""
