DROP TABLE IF EXISTS {db}.latency_1d_mv;
DROP TABLE IF EXISTS {db}.latency_1h_mv;
DROP TABLE IF EXISTS {db}.latency_1m_mv;
DROP TABLE IF EXISTS {db}.latency_1d;
DROP TABLE IF EXISTS {db}.latency_1h;
DROP TABLE IF EXISTS {db}.latency_1m
