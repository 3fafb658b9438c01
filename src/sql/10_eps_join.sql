
-- eps_join: pairs of rows whose vectors lie within Euclidean distance eps
-- (the join functions are VOLATILE: they read tables and can run long, so
-- the planner must never evaluate them while estimating a query)

CREATE FUNCTION eps_join(left_table regclass, left_key text, left_vector text,
                         right_table regclass, right_key text, right_vector text,
                         eps float8, metric text DEFAULT 'l2')
RETURNS TABLE (left_id bigint, right_id bigint, distance float8)
AS 'MODULE_PATHNAME', 'eps_join'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000 ROWS 10000;

CREATE FUNCTION eps_join(tbl regclass, key text, vector text, eps float8,
                         metric text DEFAULT 'l2')
RETURNS TABLE (left_id bigint, right_id bigint, distance float8)
AS 'MODULE_PATHNAME', 'eps_join_self'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000 ROWS 10000;

CREATE FUNCTION eps_join_count(left_table regclass, left_key text, left_vector text,
                               right_table regclass, right_key text, right_vector text,
                               eps float8, metric text DEFAULT 'l2')
RETURNS bigint
AS 'MODULE_PATHNAME', 'eps_join_count'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000;

CREATE FUNCTION eps_join_count(tbl regclass, key text, vector text, eps float8,
                               metric text DEFAULT 'l2')
RETURNS bigint
AS 'MODULE_PATHNAME', 'eps_join_count_self'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000;

COMMENT ON FUNCTION eps_join(regclass, text, text, regclass, text, text, float8, text) IS
'pairs (left_id, right_id, distance) with l2_distance (metric ''l2'') or cosine_distance (metric ''cosine'') of left and right <= eps';
COMMENT ON FUNCTION eps_join(regclass, text, text, float8, text) IS
'self-join: each unordered pair of distinct rows within eps once, left_id <= right_id';
