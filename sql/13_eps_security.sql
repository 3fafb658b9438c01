-- privileges and row-level security: the functions see exactly what the
-- caller's SELECT would see
CREATE TABLE sec (id int, v float8[], secret text, owner_name text);
INSERT INTO sec VALUES
    (1, '{0,0}', 'a', 'regress_sj_alice'), (2, '{0,0.5}', 'b', 'regress_sj_alice'),
    (3, '{0,0.2}', 'c', 'regress_sj_bob'),  (4, '{5,5}', 'd', 'regress_sj_bob');
CREATE ROLE regress_sj_alice;
CREATE ROLE regress_sj_bob;
CREATE ROLE regress_sj_eve;
GRANT SELECT (id, v) ON sec TO regress_sj_eve;       -- column privileges only
GRANT SELECT (id) ON sec TO regress_sj_bob;           -- no SELECT on v
GRANT SELECT ON sec TO regress_sj_alice;

SET ROLE regress_sj_bob;
SELECT sj_err($$SELECT * FROM eps_join('sec', 'id', 'v', 1)$$);
SELECT sj_err($$SELECT eps_join_count('sec', 'id', 'v', 'sec', 'id', 'v', 1)$$);
RESET ROLE;

SET ROLE regress_sj_eve;
SELECT * FROM eps_join('sec', 'id', 'v', 1) ORDER BY 1, 2;
RESET ROLE;

-- row-level security: alice sees only her rows
ALTER TABLE sec ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_own ON sec USING (owner_name = current_user);
SET ROLE regress_sj_alice;
SELECT * FROM eps_join('sec', 'id', 'v', 1) ORDER BY 1, 2;
SELECT eps_join_count('sec', 'id', 'v', 'sec', 'id', 'v', 10);
-- with row_security off, a user subject to policies is refused
SET row_security = off;
SELECT sj_err($$SELECT * FROM eps_join('sec', 'id', 'v', 1)$$);
RESET row_security;
RESET ROLE;
-- the owner bypasses the policy unless it is forced
ALTER TABLE sec OWNER TO regress_sj_bob;
SET ROLE regress_sj_bob;
SELECT count(*) FROM eps_join('sec', 'id', 'v', 1);
ALTER TABLE sec FORCE ROW LEVEL SECURITY;
SELECT count(*) FROM eps_join('sec', 'id', 'v', 1);
SELECT count(*) FROM eps_join('sec', 'id', 'v', 10);
ALTER TABLE sec NO FORCE ROW LEVEL SECURITY;
RESET ROLE;

-- views, partitioned tables and inheritance read what a SELECT reads
CREATE VIEW sec_view AS SELECT id, v FROM sec WHERE id <> 3;
SELECT * FROM eps_join('sec_view', 'id', 'v', 1) ORDER BY 1, 2;
CREATE TABLE part (id int, v float8[]) PARTITION BY RANGE (id);
CREATE TABLE part_a PARTITION OF part FOR VALUES FROM (0) TO (10);
CREATE TABLE part_b PARTITION OF part FOR VALUES FROM (10) TO (20);
INSERT INTO part VALUES (1, '{0}'), (2, '{0.5}'), (11, '{0.7}'), (12, '{9}');
SELECT * FROM eps_join('part', 'id', 'v', 0.5) ORDER BY 1, 2;
CREATE TABLE inh_parent (id int, v float8[]);
CREATE TABLE inh_child () INHERITS (inh_parent);
INSERT INTO inh_parent VALUES (1, '{0}');
INSERT INTO inh_child VALUES (2, '{0.1}');
SELECT * FROM eps_join('inh_parent', 'id', 'v', 1) ORDER BY 1, 2;
-- a dropped column before the vector column
CREATE TABLE dropped (a int, id int, junk text, v float8[]);
ALTER TABLE dropped DROP COLUMN junk;
ALTER TABLE dropped DROP COLUMN a;
INSERT INTO dropped VALUES (1, '{1,1}'), (2, '{1,2}');
SELECT * FROM eps_join('dropped', 'id', 'v', 1) ORDER BY 1, 2;
-- rows inserted earlier in the same transaction are seen; rolled back ones are not
BEGIN;
INSERT INTO dropped VALUES (3, '{1,1.5}');
SELECT count(*) FROM eps_join('dropped', 'id', 'v', 1);
ROLLBACK;
SELECT count(*) FROM eps_join('dropped', 'id', 'v', 1);

-- the schema must be usable, as for a SELECT, even when the table is named by OID
CREATE SCHEMA sj_hidden;
CREATE TABLE sj_hidden.h (id int, v float8[]);
INSERT INTO sj_hidden.h VALUES (1, '{0}'), (2, '{0.5}');
GRANT SELECT ON sj_hidden.h TO regress_sj_eve;
SELECT 'sj_hidden.h'::regclass::oid AS hidden_oid \gset
SET ROLE regress_sj_eve;
SELECT sj_err('SELECT count(*) FROM eps_join(' || :hidden_oid || '::regclass, ''id'', ''v'', 1)');
RESET ROLE;
DROP SCHEMA sj_hidden CASCADE;

DROP VIEW sec_view;
DROP TABLE sec;
DROP ROLE regress_sj_alice;
DROP ROLE regress_sj_bob;
DROP ROLE regress_sj_eve;
