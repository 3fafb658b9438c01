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

-- The rows and the count query of fn (eps_join, jaccard_join) over the id
-- and col columns of l, a self-join or against r, with its further
-- arguments args (SQL text).
CREATE OR REPLACE FUNCTION sjd_join_sql(fn text, l text, r text, col text, args text,
                                        OUT q text, OUT qc text)
LANGUAGE plpgsql AS $$
DECLARE a text := CASE WHEN r IS NULL THEN format('%L, %L, %L, ', l, 'id', col)
                       ELSE format('%L, %L, %L, %L, %L, %L, ', l, 'id', col, r, 'id', col) END || args;
BEGIN
    q := format('SELECT * FROM %s(%s)', fn, a);
    qc := format('SELECT %s_count(%s)', fn, a);
END $$;

-- The CPU case of a join: q's rows on the CPU (into table cpu) are as many
-- as qc counts.
CREATE OR REPLACE FUNCTION sjd_cpu_cases(label text, q text, qc text, cpu text DEFAULT 'sjd_cpu')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE n bigint; c bigint;
BEGIN
    PERFORM sjd_capture(cpu, 'cpu', q);
    EXECUTE format('SELECT count(*) FROM %I', cpu) INTO n;
    c := sjd_scalar('cpu', qc);
    RETURN NEXT sjd_report(label || ': cpu count', CASE WHEN c <> n THEN format('count %s, rows %s', c, n) END, n || ' pairs');
END $$;

-- The GPU cases of a join whose rows on the CPU are in table cpu: q's rows
-- (into table gpu) and qc's count on the GPU equal the CPU's, with the
-- session's simjoin.devices and then (devices) on each of sjd_device_lists().
CREATE OR REPLACE FUNCTION sjd_gpu_cases(label text, q text, qc text, mem text DEFAULT '0',
                                         devices boolean DEFAULT true,
                                         cpu text DEFAULT 'sjd_cpu', gpu text DEFAULT 'sjd_gpu')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE p text; n bigint; c bigint; devs text;
BEGIN
    IF NOT sjd_gpu() THEN
        RETURN;
    END IF;
    EXECUTE format('SELECT count(*) FROM %I', cpu) INTO n;
    -- NULL: as the session has it
    FOREACH devs IN ARRAY ARRAY[NULL]::text[] || CASE WHEN devices THEN sjd_device_lists() END LOOP
        IF devs IS NOT NULL THEN
            PERFORM set_config('simjoin.devices', devs, true);
        END IF;
        PERFORM sjd_capture(gpu, 'gpu', q, mem);
        p := sjd_same(gpu, cpu);
        c := sjd_scalar('gpu', qc, mem);
        IF devs IS NOT NULL THEN
            PERFORM set_config('simjoin.devices', 'all', true);
        END IF;
        IF p IS NULL AND c <> n THEN
            p := format('gpu count %s, cpu rows %s', c, n);
        END IF;
        RETURN NEXT sjd_report(label || CASE WHEN devs IS NULL THEN ': gpu = cpu'
                                             ELSE ': gpu on devices ' || devs || ' = cpu' END, p,
                               CASE WHEN mem <> '0' THEN 'gpu_memory_limit ' || mem ELSE '' END);
    END LOOP;
END $$;

-- Plain SQL joins through Custom Scan (SimJoin) (customscan_diff.sql,
-- postgis_diff.sql).
-- Capture q into tbl: through the node on device, or with PostgreSQL's plan
-- (device 'off').  The native join methods are discouraged so that the node
-- is used whenever it is offered; sjd_uses_node checks that it was.
-- PostgreSQL's own join methods (nested loop, hash, merge) on or off.
CREATE OR REPLACE FUNCTION sjd_native_joins(enabled boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('enable_nestloop', enabled::text, true);
    PERFORM set_config('enable_hashjoin', enabled::text, true);
    PERFORM set_config('enable_mergejoin', enabled::text, true);
END $$;

-- Does q's plan, under the current settings, have a line LIKE pattern?
CREATE OR REPLACE FUNCTION sjd_plan_has(q text, pattern text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE line text; found boolean := false;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        found := found OR line LIKE pattern;
    END LOOP;
    RETURN found;
END $$;

CREATE OR REPLACE FUNCTION sjd_sql(tbl text, device text, q text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simjoin.enable_customscan', (device <> 'off')::text, true);
    PERFORM sjd_native_joins(device = 'off');
    PERFORM sjd_capture(tbl, CASE WHEN device = 'off' THEN 'cpu' ELSE device END, q);
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    PERFORM sjd_native_joins(true);
END $$;

CREATE OR REPLACE FUNCTION sjd_uses_node(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE found boolean;
BEGIN
    PERFORM sjd_native_joins(false);
    found := sjd_plan_has(q, '%Custom Scan (SimJoin)%');
    PERFORM sjd_native_joins(true);
    RETURN found;
END $$;

-- One case: the node on the CPU = PostgreSQL; the node on the GPU = CPU.
CREATE OR REPLACE FUNCTION sjd_sql_case(label text, q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    IF NOT sjd_uses_node(q) THEN
        RETURN NEXT sjd_report(label, 'the plan does not use Custom Scan (SimJoin)');
        RETURN;
    END IF;
    PERFORM sjd_sql('sjd_native', 'off', q);
    PERFORM sjd_sql('sjd_cpu', 'cpu', q);
    SELECT count(*) INTO n FROM sjd_native;
    RETURN NEXT sjd_report(label || ': node on cpu = PostgreSQL', sjd_same('sjd_cpu', 'sjd_native'),
                           n || ' rows');
    IF sjd_gpu() THEN
        PERFORM sjd_sql('sjd_gpu', 'gpu', q);
        RETURN NEXT sjd_report(label || ': node on gpu = cpu', sjd_same('sjd_gpu', 'sjd_cpu'));
    ELSE
        RETURN NEXT 'SKIP ' || label || ': node on gpu (no GPU)';
    END IF;
END $$;
