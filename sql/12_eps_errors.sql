-- eps_join: every bad input is a clear error with a specific SQLSTATE
CREATE TABLE e_ok (id int, v float8[]);
INSERT INTO e_ok VALUES (1, '{0,0}'), (2, '{1,1}');
CREATE TABLE e_dims (id int, v float8[]);
INSERT INTO e_dims VALUES (1, '{0,0}'), (2, '{1,1,1}');
CREATE TABLE e_nullelem (id int, v float8[]);
INSERT INTO e_nullelem VALUES (1, '{0,0}'), (2, '{1,NULL}');
CREATE TABLE e_2d (id int, v float8[]);
INSERT INTO e_2d VALUES (1, '{{0,0},{1,1}}');
CREATE TABLE e_empty (id int, v float8[]);
INSERT INTO e_empty VALUES (1, '{}');
CREATE TABLE e_nullkey (id int, v float8[]);
INSERT INTO e_nullkey VALUES (1, '{0}'), (NULL, '{1}');
CREATE TABLE e_types (id int, tkey text, fkey float8, iv int[], t text, v3 float8[]);
INSERT INTO e_types VALUES (1, 'a', 1.5, '{1,2}', 'x', '{1,2,3}');
CREATE SEQUENCE e_seq;

SELECT sj_err($$SELECT * FROM eps_join('no_such_table', 'id', 'v', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_ok', 'nokey', 'v', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_ok', 'id', 'V', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_ok', 'id', 'ctid', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_types', 'tkey', 'v3', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_types', 'fkey', 'v3', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_types', 'id', 'iv', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_types', 'id', 't', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_dims', 'id', 'v', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_ok', 'id', 'v', 'e_types', 'id', 'v3', 1)$$);
SELECT sj_err($$SELECT eps_join_count('e_nullelem', 'id', 'v', 1)$$);
SELECT sj_err($$SELECT eps_join_count('e_2d', 'id', 'v', 1)$$);
SELECT sj_err($$SELECT eps_join_count('e_empty', 'id', 'v', 1)$$);
SELECT sj_err($$SELECT eps_join_count('e_nullkey', 'id', 'v', 1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_ok', 'id', 'v', -1)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_ok', 'id', 'v', 'NaN')$$);
SELECT sj_err($$SELECT * FROM eps_join('e_ok', 'id', 'v', 'Infinity')$$);
SELECT sj_err($$SELECT eps_join_count('e_ok', 'id', 'v', 'e_ok', 'id', 'v', -0.5)$$);
SELECT sj_err($$SELECT * FROM eps_join('e_seq', 'id', 'v', 1)$$);
-- NULL arguments: no rows, a NULL count
SELECT count(*) FROM eps_join('e_ok', 'id', 'v', NULL);
SELECT eps_join_count('e_ok', 'id', NULL, 1) IS NULL AS is_null;
-- after every error the session still works
SELECT * FROM eps_join('e_ok', 'id', 'v', 2) ORDER BY 1, 2;
