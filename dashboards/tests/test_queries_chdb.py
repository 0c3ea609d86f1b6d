"""Every dashboard panel's, annotation's, variable's and alert rule's SQL on the modern
engine (chdb), over known rows, with exact answers: the heatmap's buckets, the fleet's
health counts and p99, the open tickets, and which rules fire (and which must not: %util
100 at queue depth 1 on a healthy disk, a flush burst on an idle disk), and hosts and disks
named with quotes, backslashes and injections read literally. The same checks run on the
18.16 server in integration-tests/test_dashboards.py."""

import pytest

from testkit import known_rows

from chdb_runner import MigratedChdb


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    engine = MigratedChdb(tmp_path_factory.mktemp("chdb"))
    fleet = known_rows.Fleet.named("chdb")
    known_rows.insert(engine.execute, fleet.tables())
    yield engine, fleet
    engine.close()


def test_disk_view_heatmap_buckets_means_and_worst_events_are_exact(warehouse):
    known_rows.check_disk_view(warehouse[0].rows, warehouse[1])


def test_fleet_view_counts_health_anomalies_p99_and_open_tickets(warehouse):
    known_rows.check_fleet_view(warehouse[0].rows, warehouse[1])


def test_anomaly_view_filters_and_reads_the_evidence(warehouse):
    known_rows.check_anomaly_view(warehouse[0].rows, warehouse[1])


def test_every_query_runs(warehouse):
    known_rows.check_every_query_runs(warehouse[0].rows, warehouse[1])


def test_no_picked_value_breaks_out_of_its_literal(warehouse):
    known_rows.check_picked_values_stay_literal(warehouse[0].rows, warehouse[0].execute, "chdb")


def test_rules_fire_on_their_cases_and_not_on_busy_or_bursty_healthy_disks(warehouse):
    known_rows.check_rules(warehouse[0].rows, warehouse[1])
