-- simjoin: core functions (devices, statistics, vector distance)

\echo Use "CREATE EXTENSION simjoin" to load this file. \quit

CREATE FUNCTION simjoin_devices()
RETURNS TABLE (device int, name text, total_memory bigint,
               free_memory bigint, compute_capability text)
AS 'MODULE_PATHNAME', 'simjoin_devices'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION simjoin_devices() IS
'CUDA devices simjoin can use in this session (no rows where none is usable)';

CREATE FUNCTION simjoin_last_stats(
    OUT operator text, OUT device text, OUT strategy text,
    OUT left_rows bigint, OUT right_rows bigint, OUT pairs bigint,
    OUT batches bigint, OUT scan_ms float8, OUT build_ms float8,
    OUT probe_ms float8, OUT transfer_ms float8, OUT emit_ms float8,
    OUT total_ms float8, OUT device_memory bigint, OUT scan_workers int,
    OUT devices text, OUT decided bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'simjoin_last_stats'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION simjoin_last_stats() IS
'where the time of the last simjoin join in this session went, by phase';

-- Planner support of l2_distance and jaccard: asked while a query using them
-- is planned, it loads simjoin's module then, so that the planner hooks of
-- Custom Scan (SimJoin) are in place before join paths are built.
CREATE FUNCTION simjoin_planner_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'simjoin_planner_support'
LANGUAGE C STRICT;

CREATE FUNCTION l2_distance(float8[], float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'l2_distance_float8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT simjoin_planner_support;

CREATE FUNCTION l2_distance(float4[], float4[]) RETURNS float8
AS 'MODULE_PATHNAME', 'l2_distance_float4'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT simjoin_planner_support;

CREATE OPERATOR <-> (
    LEFTARG = float8[], RIGHTARG = float8[],
    FUNCTION = l2_distance, COMMUTATOR = OPERATOR(<->)
);

CREATE OPERATOR <-> (
    LEFTARG = float4[], RIGHTARG = float4[],
    FUNCTION = l2_distance, COMMUTATOR = OPERATOR(<->)
);

-- Cosine distance, 1 - cos(a, b) in [0, 2]; NaN for a zero vector (which
-- therefore joins nothing).  <=> is pgvector's spelling.
CREATE FUNCTION cosine_distance(float8[], float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'cosine_distance_float8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT simjoin_planner_support;

CREATE FUNCTION cosine_distance(float4[], float4[]) RETURNS float8
AS 'MODULE_PATHNAME', 'cosine_distance_float4'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT simjoin_planner_support;

CREATE OPERATOR <=> (
    LEFTARG = float8[], RIGHTARG = float8[],
    FUNCTION = cosine_distance, COMMUTATOR = OPERATOR(<=>)
);

CREATE OPERATOR <=> (
    LEFTARG = float4[], RIGHTARG = float4[],
    FUNCTION = cosine_distance, COMMUTATOR = OPERATOR(<=>)
);
