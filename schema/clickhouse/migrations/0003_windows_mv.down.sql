DROP TABLE IF EXISTS {db}.windows_mv
