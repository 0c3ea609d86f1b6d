"""The precision set at CI's scale: healthy disks of every kind, bursty ones among them,
raise no warning or critical verdict and keep their health; every injected pathology is
found with its kind. `make evaluate-precision` runs the same at 2,000 disks (PRECISION.md)."""
import pytest

from iopipe.synthetic import precision

pytestmark = pytest.mark.jar

# Every kind of healthy disk twenty times over, and one of each pathology, over 30 minutes:
# about two minutes to generate and judge on CI's two cores.
DISKS = 200


def test_healthy_bursty_disks_stay_quiet_and_every_pathology_is_found_with_its_kind():
    result = precision.evaluate(DISKS)
    assert len(result["disks"]) == 14
    assert precision.false_alarms(result) == {}, precision.markdown(result, DISKS)
    assert precision.missed(result) == [], precision.markdown(result, DISKS)
