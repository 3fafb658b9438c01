
-- theta_join: pairs of rows for which a condition over l and r is true

CREATE FUNCTION theta_join(left_table regclass, left_key text,
                           right_table regclass, right_key text, condition text)
RETURNS TABLE (left_id bigint, right_id bigint)
AS 'MODULE_PATHNAME', 'theta_join'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000 ROWS 10000;

CREATE FUNCTION theta_join_count(left_table regclass, left_key text,
                                 right_table regclass, right_key text, condition text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'theta_join_count'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000;

COMMENT ON FUNCTION theta_join(regclass, text, regclass, text, text) IS
'pairs (left_id, right_id) of rows for which condition, over columns l.* and r.*, is true';
