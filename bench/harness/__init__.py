"""What the benchmarks share and answer no question of their own: the checkout's paths, a real
server to measure (``server``, ``scratch_server``), synthetic memories and queries, writes and
timed searches through the API, percentiles, the HNSW build seen from outside, bulk loading of
large stores, a throwaway PostgreSQL, and the machine's speed."""
