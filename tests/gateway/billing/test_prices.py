import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway.billing.prices import (CATALOGUE_EFFECTIVE_FROM, PriceBook, PricePoint, UnknownPrice,
                                    batch_discounts, request_cost, seed_prices_from_catalogue)
from gateway.catalogue import CatalogueError
from gateway.catalogue import parse_catalogue
from gateway.crud.prices import list_prices, set_price

D = Decimal
JAN, MAR = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)


def _price(**kw) -> PricePoint:
    base = dict(model="m", input_per_million=D("0.10"), output_per_million=D("0.30"),
                cached_input_per_million=D("0.05"), cached_output_per_million=D("0.01"), effective_from=JAN)
    return PricePoint(**{**base, **kw})


def test_cost_splits_cached_and_uncached_tokens_exactly():
    # 700 uncached prompt at 0.10, 300 cached at 0.05, 500 completion at 0.30 (per million)
    assert request_cost(_price(), prompt_tokens=1000, completion_tokens=500, cached_tokens=300,
                        cache_hit=False) == D("0.000235")


def test_semantic_cache_hit_bills_completion_at_cached_output_price():
    assert request_cost(_price(), prompt_tokens=1000, completion_tokens=500, cached_tokens=1000,
                        cache_hit=True) == D("0.000055")


def test_a_discount_comes_off_the_whole_before_the_one_rounding():
    full = request_cost(_price(), prompt_tokens=1000, completion_tokens=500, cached_tokens=300, cache_hit=False)
    assert request_cost(_price(), prompt_tokens=1000, completion_tokens=500, cached_tokens=300, cache_hit=False,
                        discount=D("0.5")) == full / 2 == D("0.0001175")
    # 3 tokens at 0.10: 0.0000003 x 0.75 = 0.000000225 -> 10 places, half-even
    assert request_cost(_price(), prompt_tokens=3, completion_tokens=0, cached_tokens=0, cache_hit=False,
                        discount=D("0.25")) == D("0.0000002250")


def test_batch_discounts_come_from_the_catalogue_default_half(database):
    cat = parse_catalogue({"models": {"m": {"weights": "w", "price": {"input_per_million": 1, "batch_discount": 0.4},
                                            "versions": {"v": {}}}},
                           "embeddings": {"e": {"price": {"input_per_million": 1}}}})
    assert batch_discounts(cat) == {"m": D("0.4"), "e": D("0.5")}
    with database.session() as s:
        seed_prices_from_catalogue(s, cat)
    book = PriceBook(database, batch_discounts=batch_discounts(cat))
    assert book.cost("m", prompt_tokens=1_000_000, completion_tokens=0, kind="batch") == D("0.6")
    assert book.cost("m", prompt_tokens=1_000_000, completion_tokens=0) == D("1")
    with pytest.raises(ValueError):
        book.cost("m", prompt_tokens=1, completion_tokens=0, kind="later")
    with pytest.raises(CatalogueError):
        parse_catalogue({"models": {"m": {"weights": "w", "price": {"input_per_million": 1, "batch_discount": 1.5},
                                          "versions": {"v": {}}}}})


def test_no_float_drift_over_many_requests():
    one = request_cost(_price(), prompt_tokens=1, completion_tokens=0, cached_tokens=0, cache_hit=False)
    assert one == D("0.0000001")
    assert sum([one] * 1_000_000, D(0)) == D("0.1")


def test_price_in_effect_by_date(database):
    with database.session() as s:
        set_price(s, model="m", input_per_million=D("1"), output_per_million=D("2"), effective_from=JAN)
        set_price(s, model="m", input_per_million=D("3"), output_per_million=D("4"), effective_from=MAR)
    book = PriceBook(database)
    with pytest.raises(UnknownPrice):
        book.price_at("m", datetime(2025, 12, 31, tzinfo=UTC))
    assert book.price_at("m", JAN).input_per_million == D("1")
    assert book.price_at("m", datetime(2026, 2, 28, 23, 59, tzinfo=UTC)).input_per_million == D("1")
    assert book.price_at("m", MAR).input_per_million == D("3")
    assert book.cost("m", prompt_tokens=10**6, completion_tokens=10**6, when=datetime(2026, 2, 1, tzinfo=UTC)) == D(3)
    assert book.has_price("m") and not book.has_price("unknown")


def test_reload_picks_up_changes_and_same_date_overwrites(database):
    book = PriceBook(database, refresh_s=3600)
    assert not book.has_price("m")
    with database.session() as s:
        set_price(s, model="m", input_per_million=D("1"), output_per_million=D("2"), effective_from=JAN)
        set_price(s, model="m", input_per_million=D("5"), output_per_million=D("6"), effective_from=JAN)
        assert len(list_prices(s)) == 1
    assert not book.has_price("m")  # cached until reload (the admin API reloads on change)
    book.reload()
    assert book.price_at("m").input_per_million == D("5")


def test_a_future_only_price_is_not_a_price_yet(database):
    with database.session() as s:
        set_price(s, model="m", input_per_million=D("1"), output_per_million=D("1"),
                  effective_from=datetime(2999, 1, 1, tzinfo=UTC))
    assert not PriceBook(database).has_price("m")


def test_seed_from_catalogue_fills_gaps_only(database, deploy_catalogue):
    with database.session() as s:
        set_price(s, model="smollm2-135m-instruct", input_per_million=D("9"), output_per_million=D("9"),
                  effective_from=JAN)
        assert seed_prices_from_catalogue(s, deploy_catalogue) == ["all-minilm-l6-v2"]
        assert seed_prices_from_catalogue(s, deploy_catalogue) == []
    book = PriceBook(database)
    assert book.price_at("smollm2-135m-instruct").input_per_million == D("9")
    emb = book.price_at("all-minilm-l6-v2", datetime(2000, 1, 1, tzinfo=UTC))
    assert emb.input_per_million == D("0.01") and emb.effective_from == CATALOGUE_EFFECTIVE_FROM
    assert book.missing_prices(deploy_catalogue) == []


def test_missing_prices_names_every_unpriced_model(database):
    catalogue = parse_catalogue({
        "models": {"a": {"weights": "w", "price": {"input_per_million": 0.1}, "versions": {"v": {}}},
                   "b": {"weights": "w", "price": {"input_per_million": 0.1}, "versions": {"v": {}}}},
        "embeddings": {"e": {"price": {"input_per_million": 0.1}}}})
    with database.session() as s:
        set_price(s, model="b", input_per_million=D("1"), output_per_million=D("1"), effective_from=JAN)
    assert PriceBook(database).missing_prices(catalogue) == ["a", "e"]


def test_stale_prices_refresh_in_the_background(database):
    book = PriceBook(database, refresh_s=0)
    assert not book.has_price("m")  # first read: loaded synchronously
    with database.session() as s:
        set_price(s, model="m", input_per_million=D("1"), output_per_million=D("2"), effective_from=JAN)
    for _ in range(200):  # each stale read starts (at most one) refresh thread and returns at once
        if book.has_price("m"):
            break
        time.sleep(0.01)
    assert book.has_price("m")


def _with_price(price: dict):
    return parse_catalogue({"models": {"m": {"weights": "w", "price": price, "versions": {"v": {}}}}})


def test_catalogue_tiers_are_seeded_exactly_and_the_ledger_cost_is_the_first_tiers(database):
    cat = _with_price({"input_per_million": 0.2, "output_per_million": 0.8, "tiers": [
        {"up_to": 100_000_000, "input_per_million": 0.2, "output_per_million": 0.8},
        {"up_to": None, "input_per_million": 0.1, "output_per_million": 0.4}]})
    with database.session() as s:
        seed_prices_from_catalogue(s, cat)
        (row,) = list_prices(s)
    assert row.tiers == [{"up_to": 100_000_000, "input_per_million": "0.2", "output_per_million": "0.8"},
                         {"up_to": None, "input_per_million": "0.1", "output_per_million": "0.4"}]
    book = PriceBook(database)
    point = book.price_at("m")
    assert point.tiered and point.tiers[1].input_per_million == D("0.1")
    # A row's own cost is the flat (first-tier) figure; the bill applies the tiers.
    assert book.cost("m", prompt_tokens=1_000_000, completion_tokens=1_000_000) == D("1.0")


@pytest.mark.parametrize("tiers", [
    [{"up_to": 10, "input_per_million": 0.3, "output_per_million": 0.8}, {"up_to": None, "input_per_million": 0.1}],
    [{"up_to": 10, "input_per_million": 0.2, "output_per_million": 0.8}, {"up_to": 5, "input_per_million": 0.1}],
    [{"up_to": 10, "input_per_million": 0.2, "output_per_million": 0.8}, {"up_to": 20, "input_per_million": 0.1}],
    [{"up_to": None, "input_per_million": 0.2, "output_per_million": 0.8}, {"up_to": None, "input_per_million": 0.1}],
])
def test_bad_catalogue_tiers_are_refused(tiers):
    with pytest.raises(CatalogueError, match="tiers"):
        _with_price({"input_per_million": 0.2, "output_per_million": 0.8, "tiers": tiers})
