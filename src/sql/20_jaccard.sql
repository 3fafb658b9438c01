
-- jaccard_join: pairs of rows whose sets have Jaccard similarity >= threshold

CREATE FUNCTION jaccard(int4[], int4[]) RETURNS float8
AS 'MODULE_PATHNAME', 'jaccard_int'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT simjoin_planner_support;

CREATE FUNCTION jaccard(int8[], int8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'jaccard_int'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT simjoin_planner_support;

CREATE FUNCTION jaccard(text[], text[]) RETURNS float8
AS 'MODULE_PATHNAME', 'jaccard_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT simjoin_planner_support;

COMMENT ON FUNCTION jaccard(int4[], int4[]) IS
'|a ∩ b| / |a ∪ b| of the sets of elements of two arrays (0 for two empty sets)';

CREATE FUNCTION simjoin_words(text) RETURNS text[]
AS 'MODULE_PATHNAME', 'simjoin_words'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simjoin_words(text) IS
'the lower-cased words (runs of letters and digits) of a string';

CREATE FUNCTION simjoin_qgrams(text, q int DEFAULT 3) RETURNS text[]
AS 'MODULE_PATHNAME', 'simjoin_qgrams'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simjoin_qgrams(text, int) IS
'the q-grams of each lower-cased word padded with q-1 spaces before and one after (pg_trgm''s trigrams for q = 3)';

CREATE FUNCTION jaccard_join(left_table regclass, left_key text, left_set text,
                             right_table regclass, right_key text, right_set text,
                             threshold float8)
RETURNS TABLE (left_id bigint, right_id bigint, similarity float8)
AS 'MODULE_PATHNAME', 'jaccard_join'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000 ROWS 10000;

CREATE FUNCTION jaccard_join(tbl regclass, key text, set text, threshold float8)
RETURNS TABLE (left_id bigint, right_id bigint, similarity float8)
AS 'MODULE_PATHNAME', 'jaccard_join_self'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000 ROWS 10000;

CREATE FUNCTION jaccard_join_count(left_table regclass, left_key text, left_set text,
                                   right_table regclass, right_key text, right_set text,
                                   threshold float8)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jaccard_join_count'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000;

CREATE FUNCTION jaccard_join_count(tbl regclass, key text, set text, threshold float8)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jaccard_join_count_self'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED COST 10000;

COMMENT ON FUNCTION jaccard_join(regclass, text, text, regclass, text, text, float8) IS
'pairs (left_id, right_id, similarity) with jaccard(left, right) >= threshold';
COMMENT ON FUNCTION jaccard_join(regclass, text, text, float8) IS
'self-join: each unordered pair of distinct rows at or above the threshold once, left_id <= right_id';
