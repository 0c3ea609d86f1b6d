DROP TABLE IF EXISTS {db}.windows
