"""iopipe's tooling: the stack and its clients, the ClickHouse migrations and cookbook, the
dashboards generator, the ticket bridge, the fault disk and the seed scenarios, the
synthetic fleets and the benchmarks. Run from the repository root, as `python3 -m iopipe.X`;
it reads schema/ and the other folders of the checkout it lives in."""
