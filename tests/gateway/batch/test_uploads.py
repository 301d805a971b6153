"""Upload slots: a tenant holds at most `per_tenant` at once; a slot comes back however its upload ends."""
import pytest

from gateway.batch.uploads import TooManyUploads, UploadSlots


def test_a_tenant_past_its_slots_is_refused_and_others_are_not():
    slots = UploadSlots(2)
    with slots.hold("a"), slots.hold("a"):
        with pytest.raises(TooManyUploads, match="at most 2 per tenant"), slots.hold("a"):
            pass
        with slots.hold("b"):
            assert (slots.held("a"), slots.held("b")) == (2, 1)
    assert slots.held("a") == 0


def test_a_failed_upload_gives_its_slot_back():
    slots = UploadSlots(1)
    with pytest.raises(ValueError), slots.hold("a"):
        raise ValueError("bad file")
    with slots.hold("a"):
        assert slots.held("a") == 1
    with pytest.raises(ValueError):
        UploadSlots(0)
