"""Pure parts of hybrid search: query terms and reciprocal-rank fusion."""

from claude_code_memory.keyword import RRF_K, fuse, terms


def test_terms_drop_stopwords_and_duplicates() -> None:
    assert terms("When did Caroline go to the LGBTQ support group? Caroline!") == [
        "caroline", "go", "lgbtq", "support", "group",
    ]  # fmt: skip
    assert terms("the of and") == []
    assert terms('zq-gw-7731 "quoted"') == ["zq-gw-7731", "quoted"]


def test_fuse_rewards_agreement_and_keeps_singletons() -> None:
    fused = dict(fuse([["a", "b", "c"], ["c", "a", "d"]]))
    assert list(fused)[:2] == ["a", "c"]  # in both lists, near the top
    assert fused["a"] == 1 / (RRF_K + 1) + 1 / (RRF_K + 2)
    assert set(fused) == {"a", "b", "c", "d"}
    assert fuse([]) == []
