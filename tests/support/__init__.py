"""The test suite's machinery (servers, clients, fakes, corpora helpers), imported as ``tests.support``
by the tests and by the benchmarks under ``bench/``."""
