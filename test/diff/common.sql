-- common.sql: helpers of the differential tests
CREATE EXTENSION IF NOT EXISTS simjoin;
CREATE EXTENSION IF NOT EXISTS cube;
SELECT setseed(((:seed % 100000) / 100000.0) * 2 - 1);

-- Is a GPU usable in this session?
CREATE OR REPLACE FUNCTION sjd_gpu() RETURNS boolean LANGUAGE sql AS
$$ SELECT EXISTS (SELECT 1 FROM simjoin_devices()) $$;

-- The simjoin.devices lists a GPU case also runs with: the one GPU twice
-- (the multi-device path on one card), and two cards where two are visible.
CREATE OR REPLACE FUNCTION sjd_device_lists() RETURNS text[] LANGUAGE sql AS
$$ SELECT CASE WHEN (SELECT count(*) FROM simjoin_devices()) >= 2
               THEN ARRAY['0,0', '0,1'] ELSE ARRAY['0,0'] END $$;

-- Run a query returning rows on one device into a new temp table.
CREATE OR REPLACE FUNCTION sjd_capture(tbl text, device text, q text,
                                       mem text DEFAULT '0') RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simjoin.device', device, true);
    PERFORM set_config('simjoin.gpu_memory_limit', mem, true);
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format('CREATE TEMP TABLE %I AS %s', tbl, q);
    PERFORM set_config('simjoin.device', 'auto', true);
    PERFORM set_config('simjoin.gpu_memory_limit', '0', true);
END $$;

-- Scalar result of a query on one device.
CREATE OR REPLACE FUNCTION sjd_scalar(device text, q text, mem text DEFAULT '0')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r bigint;
BEGIN
    PERFORM set_config('simjoin.device', device, true);
    PERFORM set_config('simjoin.gpu_memory_limit', mem, true);
    EXECUTE q INTO r;
    PERFORM set_config('simjoin.device', 'auto', true);
    PERFORM set_config('simjoin.gpu_memory_limit', '0', true);
    RETURN r;
END $$;

-- Compare two captured tables as multisets (values compared exactly).
CREATE OR REPLACE FUNCTION sjd_same(a text, b text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE na bigint; nb bigint; d1 bigint; d2 bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %I', a) INTO na;
    EXECUTE format('SELECT count(*) FROM %I', b) INTO nb;
    EXECUTE format('SELECT count(*) FROM (SELECT * FROM %I EXCEPT ALL SELECT * FROM %I) x', a, b) INTO d1;
    EXECUTE format('SELECT count(*) FROM (SELECT * FROM %I EXCEPT ALL SELECT * FROM %I) x', b, a) INTO d2;
    IF d1 = 0 AND d2 = 0 THEN
        RETURN NULL;
    END IF;
    RETURN format('%s has %s rows, %s has %s; %s only in %s, %s only in %s',
                  a, na, b, nb, d1, a, d2, b);
END $$;

-- Report one case.
CREATE OR REPLACE FUNCTION sjd_report(label text, problem text, detail text DEFAULT '')
RETURNS text LANGUAGE sql AS $$
SELECT CASE WHEN problem IS NULL THEN 'ok ' || label || CASE WHEN detail <> '' THEN ' (' || detail || ')' ELSE '' END
            ELSE 'FAIL ' || label || ': ' || problem END
$$;

