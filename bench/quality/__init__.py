"""How good the answers are: retrieval recall and MRR on LoCoMo and LongMemEval, ranking ideas
replayed, scope leakage between projects, the hygiene job's proposals, the entity and profile
rules, and embedding models compared."""
