"""Test helpers more than one test folder uses: an in-process ClickHouse, the warehouse's
and the dashboards' known rows."""
